package runner

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// DefaultLeaseTTL is how long a session lease lasts without a heartbeat
// when Config.LeaseTTL is zero: how long a dead replica's sessions stay
// closed to the others.
const DefaultLeaseTTL = 30 * time.Second

// codeAborted is google.rpc.Code ABORTED, for runs whose session another
// replica took over.
const codeAborted = 10

// errLeaseLost is the cause a run is stopped with when another writer took
// its session's lease: the run must store nothing more.
var errLeaseLost = fmt.Errorf("another replica took the session over: %w", store.ErrFenced)

// heldLease is a running execution's session lease and its heartbeat.
type heldLease struct {
	lease store.Lease
	stop  chan struct{} // closed to stop the heartbeat
	done  chan struct{} // closed when the heartbeat has stopped
}

// leaseConfig sets up the runner's leases from cfg: on a store that hands
// out session leases (several replicas may share it), every execution of
// a run holds its session's lease; other stores keep the in-process rule
// alone.
func (r *Runner) leaseConfig(cfg Config) {
	l, ok := cfg.Store.(store.SessionLeaser)
	if !ok {
		return
	}
	r.leaser = l
	r.replica = cfg.Replica
	if r.replica == "" {
		r.replica = rand.Text()
	}
	r.leaseTTL = cfg.LeaseTTL
	if r.leaseTTL <= 0 {
		r.leaseTTL = DefaultLeaseTTL
	}
	r.leaseEvery = cfg.LeaseHeartbeat
	if r.leaseEvery <= 0 {
		// Three tries before the lease expires: one slow renewal does
		// not lose the session.
		r.leaseEvery = max(r.leaseTTL/3, time.Millisecond)
	}
}

// acquireLease takes the session's lease for an execution that is about
// to start, before it reads or writes anything, and starts its heartbeat.
// A session another replica writes to is ErrRunInProgress, as a busy
// session is in one process; the error names the holder (a run id and a
// replica).
func (r *Runner) acquireLease(ctx context.Context, lr *liveRun) error {
	if r.leaser == nil {
		return nil
	}
	l, err := r.takeLease(ctx, lr.key, lr.id+"@"+r.replica)
	switch {
	case errors.Is(err, store.ErrAlreadyExists):
		// Not wrapped: the session is busy, not the run's id taken.
		return fmt.Errorf("session %s has a run on another replica (%v): %w", lr.key, err, ErrRunInProgress)
	case err != nil:
		return fmt.Errorf("take the lease of session %s: %w", lr.key, err)
	}
	h := &heldLease{lease: l, stop: make(chan struct{}), done: make(chan struct{})}
	lr.mu.Lock()
	lr.lease = h
	lr.mu.Unlock()
	go r.heartbeat(lr, h)
	return nil
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
func (r *Runner) takeLease(ctx context.Context, k store.SessionKey, holder string) (store.Lease, error) {
	deadline := time.Now().Add(claimWait)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		l, err := r.leaser.AcquireLease(ctx, k, holder, r.leaseTTL)
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
func (r *Runner) heartbeat(lr *liveRun, h *heldLease) {
	defer close(h.done)
	t := time.NewTicker(r.leaseEvery)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.leaseEvery)
		_, err := r.leaser.RenewLease(ctx, h.lease, r.leaseTTL)
		cancel()
		switch {
		case errors.Is(err, store.ErrFenced), errors.Is(err, store.ErrNotFound):
			r.log.Warn("session lease lost; the run stops", "run", lr.id, "session", lr.key.String(), "err", err)
			lr.cancel(fmt.Errorf("run %s: %w", lr.id, errLeaseLost))
			return
		case err != nil:
			r.log.Warn("renew session lease", "run", lr.id, "session", lr.key.String(), "err", err)
		}
	}
}

// withLease returns ctx carrying the execution's lease, if it holds one:
// the store refuses its appends once another writer took the session.
func (lr *liveRun) withLease(ctx context.Context) context.Context {
	lr.mu.Lock()
	h := lr.lease
	lr.mu.Unlock()
	if h == nil {
		return ctx
	}
	return store.WithLease(ctx, h.lease)
}

// dropLease stops the heartbeat of an execution that has ended and gives
// its lease up, so that the session is free at once for any replica
// instead of after the lease's expiry.
func (r *Runner) dropLease(lr *liveRun) {
	lr.mu.Lock()
	h := lr.lease
	lr.lease = nil
	lr.mu.Unlock()
	if h == nil {
		return
	}
	close(h.stop)
	<-h.done
	ctx, cancel := context.WithTimeout(context.Background(), r.leaseTTL)
	defer cancel()
	switch err := r.leaser.ReleaseLease(ctx, h.lease); {
	case err == nil, errors.Is(err, store.ErrNotFound):
	case errors.Is(err, store.ErrFenced):
		r.log.Warn("session lease was taken over before the run ended", "run", lr.id, "session", lr.key.String())
	default:
		// It expires on its own.
		r.log.Warn("release session lease", "run", lr.id, "session", lr.key.String(), "err", err)
	}
}

// fenced reports whether err says the run's session was taken over.
func fenced(err error) bool { return errors.Is(err, store.ErrFenced) }

// fencedRecord ends a record whose session another writer took over. It
// is not stored: the session's new owner decides what the run became (a
// replica that recovers it marks it INTERRUPTED).
func (r *Runner) fencedRecord(rec *agentrunnerv1.Run) *agentrunnerv1.Run {
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_FAILED
	rec.EndTime = timestamppb.New(r.now())
	rec.Error = &agentrunnerv1.Status{Code: codeAborted, Message: errLeaseLost.Error()}
	return rec
}

// claimOrphan takes the lease of a session whose run a replica left
// RUNNING or PENDING, for Recover. It reports false when the session's
// lease is live (a replica is writing to it: the run is not an orphan)
// or the session is gone. The caller releases the lease it got.
func (r *Runner) claimOrphan(ctx context.Context, k store.SessionKey) (store.Lease, bool, error) {
	l, err := r.leaser.AcquireLease(ctx, k, recoverHolder+r.replica, r.leaseTTL)
	switch {
	case errors.Is(err, store.ErrAlreadyExists), errors.Is(err, store.ErrNotFound):
		return store.Lease{}, false, nil
	case err != nil:
		return store.Lease{}, false, fmt.Errorf("take the lease of session %s: %w", k, err)
	}
	return l, true, nil
}

// errTaken: another replica started (or ended) the run meanwhile.
var errTaken = errors.New("another replica took the run")

// stillOurs checks, with the session's lease held, that no replica
// started the run meanwhile from the same stored record: a pending run
// that Recover adopted is also its first replica's queue, and two
// replicas may be asked to resume one run. Whoever takes the lease first
// runs it, and its record changes before the lease is given up; the other
// finds the record changed here. A fresh run has no record yet.
func (r *Runner) stillOurs(ctx context.Context, lr *liveRun) error {
	if r.leaser == nil || !lr.persisted {
		return nil
	}
	rec, err := r.store.GetRun(ctx, lr.id)
	if err != nil {
		return fmt.Errorf("read run %s: %w", lr.id, err)
	}
	// The caller hears of it as of a busy session, or of a run that
	// cannot be resumed any more.
	want, seq, as := agentrunnerv1.RunStatus_RUN_STATUS_PENDING, rec.GetLastSequence(), ErrRunInProgress
	if lr.resume != nil {
		want, seq, as = lr.resumedFrom, lr.baseSeq, ErrNotResumable
	}
	if rec.GetStatus() != want || rec.GetLastSequence() != seq {
		return fmt.Errorf("run %s is %s at event %d: %w: %w", lr.id, rec.GetStatus(), rec.GetLastSequence(), errTaken, as)
	}
	return nil
}

// runElsewhere reports, for a queued run that could not start with err,
// whether its record is another replica's to write: that replica started
// the run (it adopted it, or this run was adopted from it), or the run was
// adopted here and its session is busy, so that the record stays pending
// and a later sweep tries again.
func (r *Runner) runElsewhere(ctx context.Context, lr *liveRun, err error) bool {
	switch {
	case errors.Is(err, errTaken):
		return true
	case r.leaser == nil || !errors.Is(err, ErrRunInProgress):
		return false
	case lr.adopted:
		return true
	}
	rec, gerr := r.store.GetRun(ctx, lr.id)
	return gerr == nil && rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_PENDING
}

// releaseClaim gives up a lease claimOrphan took.
func (r *Runner) releaseClaim(ctx context.Context, l store.Lease) {
	if err := r.leaser.ReleaseLease(context.WithoutCancel(ctx), l); err != nil && !errors.Is(err, store.ErrNotFound) {
		r.log.Warn("release session lease after recovery", "session", l.Key.String(), "err", err)
	}
}
