package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
)

// followShared streams a run that does not run in this process from the
// store (see xreplica.go): the record rec, the run's stored events after
// `after`, each once and in order, as they are stored, and last the
// record with the final status, once the stored record ends. Partial
// events and in-band errors are not stored, so they are not relayed.
func (r *Runner) followShared(ctx context.Context, rec *agentrunnerv1.Run, after uint64, yield func(Update, error) bool) followed {
	id := rec.GetRunId()
	// Subscribed before the first read: a change stored after a read is
	// notified after it, and wakes the next one.
	wake, unsub := r.watchNotices(id)
	defer unsub()
	// Watched before the first look: a run that starts here from now on
	// is handed over before it executes, even one that ends at once.
	started, unwatch := r.watchLive(id)
	defer unwatch()
	var live *liveRun
	here := func() *liveRun {
		if live == nil {
			select {
			case live = <-started:
			default:
				live = r.lookup(id)
			}
		}
		return live
	}
	if !yield(Update{Run: rec}, nil) {
		return readerStopped
	}
	k := store.RunKey(rec)
	from, err := r.followFrom(ctx, k, id, after)
	for err == nil {
		if lr := here(); lr != nil {
			// It runs here now: followed from its live log, which holds
			// all it produced here, partial events included.
			return r.followHere(ctx, lr, from, yield)
		}
		var cur *agentrunnerv1.Run
		// The record first: once it has ended, every event of the run is
		// stored, and the read that follows gets them.
		if cur, err = r.store.GetRun(ctx, id); err != nil {
			break
		}
		last := uint64(math.MaxUint64)
		if ended(cur) {
			last = cur.GetLastSequence()
		}
		var ok bool
		if from, ok, err = r.relay(ctx, k, id, from, last, here, yield); !ok {
			return readerStopped
		}
		if err == nil && ended(cur) && here() == nil {
			if !yield(Update{Run: cur}, nil) {
				return readerStopped
			}
			return followedToEnd
		}
		if err != nil {
			break
		}
		if here() != nil {
			continue // the relay stopped at the run's live log
		}
		select {
		case <-wake:
		case live = <-started:
		case <-ctx.Done():
			return contextEnded
		}
	}
	if ctx.Err() != nil {
		return contextEnded
	}
	yield(Update{}, fmt.Errorf("follow run %s: %w", id, err))
	return readerStopped
}

// followHere goes on following, from the run's live log, a run that
// followShared followed through the store until it started in this
// process: what the run produced after the last stored event relayed
// (sequence from), partial events included, then everything it produces.
func (r *Runner) followHere(ctx context.Context, lr *liveRun, from uint64, yield func(Update, error) bool) followed {
	lr.mu.Lock()
	base := lr.baseSeq
	liveFrom := 0
	for i, u := range lr.log {
		if ev := u.Event; ev != nil && !ev.GetPartial() && ev.GetSequence() <= from {
			liveFrom = i + 1
		}
	}
	lr.mu.Unlock()
	if base > from && !r.replayEvents(ctx, lr.key, lr.id, from, base, yield) {
		return readerStopped
	}
	return r.followLog(ctx, lr, from, liveFrom, false, yield)
}

// followFrom returns the sequence after which the run's events are to be
// read: after, or where the run begins when that is later. A run that
// has not started stores its events after the session's last sequence of
// now (read before the run's record).
func (r *Runner) followFrom(ctx context.Context, k store.SessionKey, id string, after uint64) (uint64, error) {
	sess, _, err := r.store.GetSession(ctx, k, store.GetOptions{NumRecentEvents: 1})
	if err != nil {
		return 0, fmt.Errorf("read session %s: %w", k, err)
	}
	rec, err := r.store.GetRun(ctx, id)
	if err != nil {
		return 0, err
	}
	from := sess.GetLastSequence()
	if first := rec.GetFirstSequence(); first > 0 {
		from = first - 1
	}
	return max(from, after), nil
}

// relay yields the run's stored events with from < sequence <= last, a
// page at a time, and returns the last sequence read. It stops before an
// event of the run once the run is live in this process (here), whose
// log the reader then follows. ok is false when the reader stopped.
func (r *Runner) relay(ctx context.Context, k store.SessionKey, id string, from, last uint64, here func() *liveRun, yield func(Update, error) bool) (uint64, bool, error) {
	for from < last {
		evs, _, err := r.store.ListEvents(ctx, k, store.EventFilter{AfterSequence: from}, store.Page{Size: replayPage})
		if err != nil {
			return from, true, fmt.Errorf("read events of run %s: %w", id, err)
		}
		for _, ev := range evs {
			if ev.GetSequence() > last {
				return from, true, nil
			}
			if ev.GetInvocationId() == id {
				if here() != nil {
					// It started here since it was looked up: its live log
					// has this event, in order with the partial events
					// before it, which the store never saw.
					return from, true, nil
				}
				if !yield(Update{Event: ev}, nil) {
					return ev.GetSequence(), false, nil
				}
			}
			from = ev.GetSequence()
		}
		if len(evs) < replayPage {
			return from, true, nil
		}
	}
	return from, true, nil
}

// streamShared streams a run this request queued in the store to the
// reader that sent it, as Stream streams a local run: it ends with the
// final record and the terminal error its status implies. A reader that
// stops first cancels the run, wherever it is (unless on_disconnect says
// to go on).
func (r *Runner) streamShared(ctx context.Context, rec *agentrunnerv1.Run, policy agentrunnerv1.OnDisconnect, yield func(Update, error) bool) {
	var final *agentrunnerv1.Run
	userEvent := rec.GetInput().GetRunConfig().GetStreamUserEvent()
	terminal := false // the run's terminal error came (it ran here)
	how := r.followShared(ctx, rec, 0, func(u Update, err error) bool {
		if u.Run != nil {
			final = u.Run
		}
		terminal = terminal || err != nil
		if u.Event != nil && u.Event.GetAuthor() == agent.UserAuthor && !userEvent {
			// The run's own message, as a local run's first reader gets
			// it: only when its config asks.
			userEvent = true
			return true
		}
		return yield(u, err)
	})
	switch {
	case how == followedToEnd:
		if err := recordErr(final); err != nil && !terminal {
			yield(Update{}, err)
		}
		return
	case policy != agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE:
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.leaseTTL)
		defer cancel()
		if _, err := r.cancelShared(cctx, rec.GetRunId(), causeDisconnect); err != nil {
			r.log.Warn("cancel a queued run whose reader went away", "run", rec.GetRunId(), "err", err)
		}
	}
	if how == contextEnded {
		yield(Update{}, fmt.Errorf("run %s: %w", rec.GetRunId(), ctx.Err()))
	}
}

// recordErr is the terminal error of a run that ended elsewhere, from its
// record: what its own replica's reader got, as near as the record says.
func recordErr(rec *agentrunnerv1.Run) error {
	msg := rec.GetError().GetMessage()
	switch rec.GetStatus() {
	case agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED:
		return fmt.Errorf("run %s: %s: %w", rec.GetRunId(), msg, context.Canceled)
	case agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED:
		return fmt.Errorf("run %s: %s: %w", rec.GetRunId(), msg, ErrShuttingDown)
	case agentrunnerv1.RunStatus_RUN_STATUS_FAILED:
		if rec.GetError().GetCode() == codeDeadlineExceeded {
			return fmt.Errorf("run %s: %w", rec.GetRunId(), context.DeadlineExceeded)
		}
		return fmt.Errorf("run %s failed: %s", rec.GetRunId(), msg)
	}
	return nil
}

// cancelShared cancels a run that is not live in this process: a queued
// run leaves the store's queue and is stored cancelled here; a run live
// on another replica is cancelled there (NotifyCancel), and cancelShared
// returns its record once the stored record has ended, or ctx ends.
func (r *Runner) cancelShared(ctx context.Context, id, cause string) (*agentrunnerv1.Run, error) {
	wake, unsub := r.watchNotices(id)
	defer unsub()
	t := time.NewTicker(cancelRetry)
	defer t.Stop()
	for ask := true; ; {
		rec, err := r.GetRun(ctx, id)
		if err != nil || ended(rec) {
			return rec, err
		}
		if ask {
			if out, err := r.cancelQueuedShared(ctx, id, cause); out != nil || err != nil {
				return out, err
			}
			if err := r.xr.notifier.NotifyCancel(ctx, id, cause); err != nil {
				return nil, fmt.Errorf("cancel run %s: %w", id, err)
			}
			ask = false
		}
		select {
		case <-wake:
		case <-t.C:
			ask = true // the request may have been lost: ask again
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// cancelQueuedShared cancels a run waiting in the store's queue; nil, nil
// when it is not queued there.
func (r *Runner) cancelQueuedShared(ctx context.Context, id, cause string) (*agentrunnerv1.Run, error) {
	rec, err := r.xr.queue.CancelQueuedRun(ctx, id, r.cancelledRecord(causeOf(cause)))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("cancel queued run %s: %w", id, err)
	}
	return proto.CloneOf(rec), nil
}

// watchNotices subscribes to the store's notices of run id (and to its
// resyncs): the channel (capacity 1) gets a wake-up for each. Call the
// returned function when done.
func (r *Runner) watchNotices(id string) (<-chan struct{}, func()) {
	wake := make(chan struct{}, 1)
	unsub := r.xr.notifier.Subscribe(func(n store.Notice) {
		if n.Kind == store.NoticeResync || (n.Kind == store.NoticeRun && n.RunID == id) {
			select {
			case wake <- struct{}{}:
			default: // a wake-up is pending already
			}
		}
	})
	return wake, unsub
}
