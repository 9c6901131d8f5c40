package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/store"
)

// heldLease is a running execution's session lease and its heartbeat.
type heldLease struct {
	lease store.Lease
	stop  chan struct{} // closed to stop the heartbeat
	done  chan struct{} // closed when the heartbeat has stopped
}

// hold records that run id holds lease l and starts its heartbeat.
func (s *shared) hold(id string, l store.Lease) {
	h := &heldLease{lease: l, stop: make(chan struct{}), done: make(chan struct{})}
	s.heldMu.Lock()
	s.held[id] = h
	s.heldMu.Unlock()
	go s.heartbeat(id, h)
}

// lease returns the lease run id holds, or nil.
func (s *shared) lease(id string) *heldLease {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	return s.held[id]
}

// unhold forgets run id's lease and stops its heartbeat; nil when it
// held none.
func (s *shared) unhold(id string) *heldLease {
	s.heldMu.Lock()
	h := s.held[id]
	delete(s.held, id)
	s.heldMu.Unlock()
	if h != nil {
		close(h.stop)
		<-h.done
	}
	return h
}

// Take takes the session's lease, starts its heartbeat, and checks the
// run's stored record (stillOurs). A session another replica writes to
// is ErrRunInProgress, as a busy session is in one process; the error
// names the holder (a run id and a replica).
func (s *shared) Take(ctx context.Context, k store.SessionKey, id string, want Expect) error {
	if s.lease(id) == nil { // else taken from the store's queue with it
		if err := s.acquire(ctx, k, id); err != nil {
			return err
		}
	}
	return s.stillOurs(ctx, id, want)
}

// acquire takes session k's lease for run id and starts its heartbeat.
// A lease taken over from a holder that stopped renewing it (Replaced)
// first interrupts the runs that holder left RUNNING on the session:
// nobody runs them any more, and the session's history must say where
// they were cut before this run adds to it. Without this, a session that
// keeps getting runs is never idle when a replica looks for such runs
// (Recover, the reaper), and they stay RUNNING beside the live one.
func (s *shared) acquire(ctx context.Context, k store.SessionKey, id string) error {
	l, err := s.takeLease(ctx, k, id+"@"+s.replica)
	var held *store.LeaseHeld
	switch {
	case errors.As(err, &held):
		// Not wrapped: the session is busy, not the run's id taken.
		return s.leasedError(k, held)
	case errors.Is(err, store.ErrAlreadyExists):
		return fmt.Errorf("session %s has a run on another replica (%v): %w", k, err, runrec.ErrRunInProgress)
	case err != nil:
		return fmt.Errorf("take the lease of session %s: %w", k, err)
	}
	s.hold(id, l)
	if l.Replaced != "" {
		s.interruptLeftovers(ctx, k, l)
	}
	return nil
}

// leasedError is the refusal of a run whose session another holder's
// live lease covers: it says until when, counted from this runner's
// clock with what the store said was left, so that a caller knows when
// to try again.
func (s *shared) leasedError(k store.SessionKey, held *store.LeaseHeld) error {
	left := held.Left
	if left <= 0 {
		left = time.Until(held.Expires) // a store that does not say
	}
	return &runrec.SessionLeased{Session: k.String(), Holder: held.Holder, RetryAt: s.now().Add(max(left, 0))}
}

// With returns ctx carrying run id's lease, if it holds one.
func (s *shared) With(ctx context.Context, id string) context.Context {
	if h := s.lease(id); h != nil {
		return store.WithLease(ctx, h.lease)
	}
	return ctx
}

// recoverHolder prefixes the holder of a lease that Recover takes for a
// moment, to look at a run a replica may have left behind.
const recoverHolder = "recover@"

// claimWait bounds how long a run waits for a recovery's claim on its
// session to end (a read of the run's record, at most an append).
const claimWait = time.Second

// takeLease acquires session k's lease for holder. A session that a
// recovery holds for a moment (any replica's periodic Recover, looking at
// a run whose lease was just released before its final record landed) is
// waited for, briefly, rather than refused as a busy one.
func (s *shared) takeLease(ctx context.Context, k store.SessionKey, holder string) (store.Lease, error) {
	deadline := time.Now().Add(claimWait)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		l, err := s.leaser.AcquireLease(ctx, k, holder, s.ttl)
		var held *store.LeaseHeld
		if !errors.As(err, &held) || !strings.HasPrefix(held.Holder, recoverHolder) || time.Now().After(deadline) {
			return l, err
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return store.Lease{}, ctx.Err()
		}
	}
}

// heartbeat renews an execution's lease until it is stopped. A lease
// another writer took stops the run: its appends would be refused anyway,
// and it must not go on calling models and tools for nothing. Other
// errors (the database briefly away) are retried at the next beat.
func (s *shared) heartbeat(id string, h *heldLease) {
	defer close(h.done)
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.every)
		_, err := s.leaser.RenewLease(ctx, h.lease, s.ttl)
		cancel()
		switch {
		case errors.Is(err, store.ErrFenced), errors.Is(err, store.ErrNotFound):
			s.log.Warn("session lease lost; the run stops", "run", id, "session", h.lease.Key.String(), "err", err)
			if lr := s.host.Lookup(id); lr != nil {
				lr.Cancel(fmt.Errorf("run %s: %w", id, runrec.ErrLeaseLost))
			}
			return
		case err != nil:
			s.log.Warn("renew session lease", "run", id, "session", h.lease.Key.String(), "err", err)
		}
	}
}

// Release gives up run id's lease, or hands it to the session's next
// queued run. Without a queue the lease goes first, outside the runner's
// registry lock (the run's record is stored by now); with one, the
// registry first: the lease then goes to the next run of the store's
// queue, or is freed. Once the readers know, the room the run held may
// let a queued run in (roomFreed).
func (s *shared) Release(k store.SessionKey, id string, unregister, finish func()) {
	if s.queue == nil {
		s.drop(id)
		unregister()
		finish()
		return
	}
	unregister()
	s.handOff(k, id)
	finish()
	s.roomFreed()
}

// drop stops the heartbeat of an execution that has ended and gives its
// lease up, so that the session is free at once for any replica instead
// of after the lease's expiry.
func (s *shared) drop(id string) {
	h := s.unhold(id)
	if h == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.ttl)
	defer cancel()
	switch err := s.leaser.ReleaseLease(ctx, h.lease); {
	case err == nil, errors.Is(err, store.ErrNotFound):
	case errors.Is(err, store.ErrFenced):
		s.log.Warn("session lease was taken over before the run ended", "run", id, "session", h.lease.Key.String())
	default:
		// It expires on its own.
		s.log.Warn("release session lease", "run", id, "session", h.lease.Key.String(), "err", err)
	}
}

// claimOrphan takes the lease of a session whose run a replica left
// RUNNING or PENDING, for Recover. It reports false when the session's
// lease is live (a replica is writing to it: the run is not an orphan)
// or the session is gone. The caller releases the lease it got.
func (s *shared) claimOrphan(ctx context.Context, k store.SessionKey) (store.Lease, bool, error) {
	// A holder of its own: two recoveries of this replica (Recover and
	// the reaper) would otherwise take the lease from each other.
	holder := fmt.Sprintf("%s%s#%d", recoverHolder, s.replica, s.claims.Add(1))
	l, err := s.leaser.AcquireLease(ctx, k, holder, s.ttl)
	switch {
	case errors.Is(err, store.ErrAlreadyExists), errors.Is(err, store.ErrNotFound):
		return store.Lease{}, false, nil
	case err != nil:
		return store.Lease{}, false, fmt.Errorf("take the lease of session %s: %w", k, err)
	}
	return l, true, nil
}

// releaseClaim gives up a lease claimOrphan took.
func (s *shared) releaseClaim(ctx context.Context, l store.Lease) {
	if err := s.leaser.ReleaseLease(context.WithoutCancel(ctx), l); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Warn("release session lease after recovery", "session", l.Key.String(), "err", err)
	}
}

// stillOurs checks, with the session's lease held, that no replica
// started the run meanwhile from the same stored record: a pending run
// that Recover adopted is also its first replica's queue, and two
// replicas may be asked to resume one run. Whoever takes the lease first
// runs it, and its record changes before the lease is given up; the other
// finds the record changed here. A fresh run has no record yet.
func (s *shared) stillOurs(ctx context.Context, id string, want Expect) error {
	if !want.Stored {
		return nil
	}
	rec, err := s.store.GetRun(ctx, id)
	if err != nil {
		return fmt.Errorf("read run %s: %w", id, err)
	}
	// The caller hears of it as of a busy session, or of a run that
	// cannot be resumed any more.
	status, seq, as := agentrunnerv1.RunStatus_RUN_STATUS_PENDING, rec.GetLastSequence(), runrec.ErrRunInProgress
	if want.Resumed {
		status, seq, as = want.From, want.Seq, runrec.ErrNotResumable
	}
	if rec.GetStatus() != status || rec.GetLastSequence() != seq {
		return fmt.Errorf("run %s is %s at event %d: %w: %w", id, rec.GetStatus(), rec.GetLastSequence(), runrec.ErrTaken, as)
	}
	return nil
}

// RunElsewhere reports, for a queued run that could not start with err,
// whether its record is another replica's to write: that replica started
// the run (it adopted it, or this run was adopted from it), or the run was
// adopted here (requeued by Recover) and its session is busy, so that the
// record stays pending and a later sweep tries again.
func (s *shared) RunElsewhere(ctx context.Context, id string, requeued bool, err error) bool {
	switch {
	case errors.Is(err, runrec.ErrTaken):
		return true
	case !errors.Is(err, runrec.ErrRunInProgress):
		return false
	case requeued:
		return true
	}
	rec, gerr := s.store.GetRun(ctx, id)
	return gerr == nil && rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_PENDING
}

// RecoverRunning marks a RUNNING run INTERRUPTED when no replica runs it:
// under the session's lease, so that the replica that ran it, should it
// come back, can store nothing more.
func (s *shared) RecoverRunning(ctx context.Context, rec *agentrunnerv1.Run) (bool, error) {
	l, ok, err := s.claimOrphan(ctx, store.RunKey(rec))
	if err != nil || !ok {
		return false, err
	}
	defer s.releaseClaim(ctx, l)
	// The run may have ended between the listing and the lease.
	cur, err := s.store.GetRun(ctx, rec.GetRunId())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("recover run %s: %w", rec.GetRunId(), err)
	case cur.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_RUNNING:
		return false, nil
	}
	return true, s.host.MarkInterrupted(store.WithLease(ctx, l), cur)
}

// RecoverPending reports whether a PENDING run is to be queued here: only
// when its session's lease is free. A live replica holds the lease of a
// session while it has a run queued behind the active one, except for the
// moment between one run and the next (the limit docs/postgresql.md states:
// queues are per replica). With a run queue, the run goes back there
// instead (unless it is there): a replica that took it from the queue
// died before it started it.
func (s *shared) RecoverPending(ctx context.Context, rec *agentrunnerv1.Run) (bool, error) {
	l, ok, err := s.claimOrphan(ctx, store.RunKey(rec))
	if err != nil || !ok {
		return false, err
	}
	s.releaseClaim(ctx, l)
	if s.queue == nil {
		return true, nil
	}
	err = s.queue.EnqueueRun(ctx, rec, false)
	switch {
	case err == nil, errors.Is(err, store.ErrAlreadyExists), errors.Is(err, store.ErrNotFound):
		// Queued; or it started (or its session went) meanwhile.
		return false, nil
	}
	return false, fmt.Errorf("recover run %s: %w", rec.GetRunId(), err)
}
