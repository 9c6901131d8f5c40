package replica

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/live"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/store"
)

// Causes sent with NotifyCancel; causeOf turns them back into the errors
// a local cancel uses.
const (
	causeCancel     = "cancel"
	causeDisconnect = "disconnect"
	causeInterrupt  = "interrupt:" // followed by the interrupting run's id
)

// cancelRetry is how often a replica waiting for a cancelled run to end
// asks again: a cancel notification is lost when a listener reconnects,
// or when it reaches the run's replica just before the run is live there.
const cancelRetry = time.Second

func causeOf(s string) error {
	switch {
	case s == causeDisconnect:
		return runrec.ErrDisconnected
	case strings.HasPrefix(s, causeInterrupt):
		return runrec.InterruptedBy(strings.TrimPrefix(s, causeInterrupt))
	}
	return runrec.ErrCancelled
}

// Follow streams a run that does not run in this process from the store:
// the record rec, the run's stored events after `after`, each once and
// in order, as they are stored, and last the record with the final
// status, once the stored record ends. Partial events and in-band errors
// are not stored, so they are not relayed. (Without a queue, no other
// replica's run can be followed: the Set's Elsewhere is stored.)
func (s *shared) Follow(ctx context.Context, rec *agentrunnerv1.Run, after uint64, yield func(live.Update, error) bool) live.Followed {
	id := rec.GetRunId()
	// Subscribed before the first read: a change stored after a read is
	// notified after it, and wakes the next one.
	wake, unsub := s.watchNotices(id)
	defer unsub()
	// Watched before the first look: a run that starts here from now on
	// is handed over before it executes, even one that ends at once.
	started, unwatch := s.watchLive(id)
	defer unwatch()
	f := &storeFollower{s: s, id: id, key: store.RunKey(rec), started: started, yield: yield}
	if !yield(live.Update{Run: rec}, nil) {
		return live.ReaderStopped
	}
	from, err := s.followFrom(ctx, f.key, id, after)
	for err == nil {
		var how live.Followed
		var done bool
		if from, how, done, err = f.step(ctx, from); done {
			return how
		}
		if err != nil || f.here() != nil {
			continue // the relay stopped at the run's live log
		}
		select {
		case <-wake:
		case f.live = <-started:
		case <-ctx.Done():
			return live.ContextEnded
		}
	}
	if ctx.Err() != nil {
		return live.ContextEnded
	}
	yield(live.Update{}, fmt.Errorf("follow run %s: %w", id, err))
	return live.ReaderStopped
}

// storeFollower is one reader following a run through the store.
type storeFollower struct {
	s       *shared
	id      string
	key     store.SessionKey
	started <-chan *live.Run
	live    *live.Run // the run, once it runs in this process
	yield   func(live.Update, error) bool
}

// here returns the run when it runs in this process now.
func (f *storeFollower) here() *live.Run {
	if f.live == nil {
		select {
		case f.live = <-f.started:
		default:
			f.live = f.s.host.Lookup(f.id)
		}
	}
	return f.live
}

// step relays what the store holds of the run after sequence from. done
// reports that the following ended, as how says.
func (f *storeFollower) step(ctx context.Context, from uint64) (uint64, live.Followed, bool, error) {
	if lr := f.here(); lr != nil {
		// It runs here now: followed from its live log, which holds all
		// it produced here, partial events included.
		rd := live.Reader{Store: f.s.store, After: from}
		return from, rd.FollowFrom(ctx, lr, f.yield), true, nil
	}
	// The record first: once it has ended, every event of the run is
	// stored, and the read that follows gets them.
	cur, err := f.s.store.GetRun(ctx, f.id)
	if err != nil {
		return from, 0, false, err
	}
	last := uint64(math.MaxUint64)
	if runrec.Ended(cur) {
		last = cur.GetLastSequence()
	}
	from, ok, err := f.relay(ctx, from, last)
	switch {
	case !ok:
		return from, live.ReaderStopped, true, nil
	case err == nil && runrec.Ended(cur) && f.here() == nil:
		if !f.yield(live.Update{Run: cur}, nil) {
			return from, live.ReaderStopped, true, nil
		}
		return from, live.FollowedToEnd, true, nil
	}
	return from, 0, false, err
}

// followFrom returns the sequence after which the run's events are to be
// read: after, or where the run begins when that is later. A run that
// has not started stores its events after the session's last sequence of
// now (read before the run's record).
func (s *shared) followFrom(ctx context.Context, k store.SessionKey, id string, after uint64) (uint64, error) {
	sess, _, err := s.store.GetSession(ctx, k, store.GetOptions{NumRecentEvents: 1})
	if err != nil {
		return 0, fmt.Errorf("read session %s: %w", k, err)
	}
	rec, err := s.store.GetRun(ctx, id)
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
// event of the run once the run is live in this process, whose log the
// reader then follows. ok is false when the reader stopped.
func (f *storeFollower) relay(ctx context.Context, from, last uint64) (uint64, bool, error) {
	for from < last {
		evs, _, err := f.s.store.ListEvents(ctx, f.key, store.EventFilter{AfterSequence: from}, store.Page{Size: live.ReplayPage})
		if err != nil {
			return from, true, fmt.Errorf("read events of run %s: %w", f.id, err)
		}
		for _, ev := range evs {
			if ev.GetSequence() > last {
				return from, true, nil
			}
			if ev.GetInvocationId() == f.id {
				if f.here() != nil {
					// It started here since it was looked up: its live log
					// has this event, in order with the partial events
					// before it, which the store never saw.
					return from, true, nil
				}
				if !f.yield(live.Update{Event: ev}, nil) {
					return ev.GetSequence(), false, nil
				}
			}
			from = ev.GetSequence()
		}
		if len(evs) < live.ReplayPage {
			return from, true, nil
		}
	}
	return from, true, nil
}

// StreamQueued streams a run this request queued in the store to the
// reader that sent it, as a local run is streamed: it ends with the final
// record and the terminal error its status implies. A reader that stops
// first cancels the run, wherever it is (unless on_disconnect says to go
// on).
func (s *shared) StreamQueued(ctx context.Context, rec *agentrunnerv1.Run, policy agentrunnerv1.OnDisconnect, yield func(live.Update, error) bool) {
	var final *agentrunnerv1.Run
	userEvent := rec.GetInput().GetRunConfig().GetStreamUserEvent()
	terminal := false // the run's terminal error came (it ran here)
	how := s.Follow(ctx, rec, 0, func(u live.Update, err error) bool {
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
	case how == live.FollowedToEnd:
		if err := endedErr(final); err != nil && !terminal {
			yield(live.Update{}, err)
		}
		return
	case policy != agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE:
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.ttl)
		defer cancel()
		if _, err := s.cancelShared(cctx, rec.GetRunId(), causeDisconnect); err != nil {
			s.log.Warn("cancel a queued run whose reader went away", "run", rec.GetRunId(), "err", err)
		}
	}
	if how == live.ContextEnded {
		yield(live.Update{}, fmt.Errorf("run %s: %w", rec.GetRunId(), ctx.Err()))
	}
}

// endedErr is the terminal error of a run that ended on another replica
// (runrec.Err), keeping what a status needs of a run its budget refused
// or stopped there (RESOURCE_EXHAUSTED, as here): the record keeps only
// its message, and the error would otherwise be unknown (Internal).
func endedErr(rec *agentrunnerv1.Run) error {
	err := runrec.Err(rec)
	if err == nil || rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_FAILED || rec.GetError().GetCode() != runrec.CodeResourceExhausted {
		return err
	}
	cause := agent.ErrBudgetExceeded
	if strings.Contains(rec.GetError().GetMessage(), agent.ErrMaxLLMCalls.Error()) {
		cause = agent.ErrMaxLLMCalls
	}
	return fmt.Errorf("%w: %w", err, cause)
}

// Cancel cancels a run that is not live in this process (see
// cancelShared).
func (s *shared) Cancel(ctx context.Context, rec *agentrunnerv1.Run) (*agentrunnerv1.Run, error) {
	return s.cancelShared(ctx, rec.GetRunId(), causeCancel)
}

// cancelShared cancels a run that is not live in this process: a queued
// run leaves the store's queue and is stored cancelled here; a run live
// on another replica is cancelled there (NotifyCancel), and cancelShared
// returns its record once the stored record has ended, or ctx ends.
func (s *shared) cancelShared(ctx context.Context, id, cause string) (*agentrunnerv1.Run, error) {
	wake, unsub := s.watchNotices(id)
	defer unsub()
	t := time.NewTicker(cancelRetry)
	defer t.Stop()
	for ask := true; ; {
		rec, err := s.getRun(ctx, id)
		if err != nil || runrec.Ended(rec) {
			return rec, err
		}
		if ask {
			if out, err := s.cancelQueuedShared(ctx, id, cause); out != nil || err != nil {
				return out, err
			}
			if err := s.notifier.NotifyCancel(ctx, id, cause); err != nil {
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

// getRun returns the stored record of a run of the app.
func (s *shared) getRun(ctx context.Context, id string) (*agentrunnerv1.Run, error) {
	rec, err := s.store.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if rec.GetAppName() != s.app {
		return nil, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return rec, nil
}

// cancelQueuedShared cancels a run waiting in the store's queue; nil, nil
// when it is not queued there.
func (s *shared) cancelQueuedShared(ctx context.Context, id, cause string) (*agentrunnerv1.Run, error) {
	end := func(rec *agentrunnerv1.Run) *agentrunnerv1.Run { return runrec.Cancelled(rec, causeOf(cause), s.now()) }
	rec, err := s.queue.CancelQueuedRun(ctx, id, end)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("cancel queued run %s: %w", id, err)
	}
	return rec.CloneVT(), nil
}

// watchNotices subscribes to the store's notices of run id (and to its
// resyncs): the channel (capacity 1) gets a wake-up for each. Call the
// returned function when done.
func (s *shared) watchNotices(id string) (<-chan struct{}, func()) {
	wake := make(chan struct{}, 1)
	unsub := s.notifier.Subscribe(func(n store.Notice) {
		if n.Kind == store.NoticeResync || (n.Kind == store.NoticeRun && n.RunID == id) {
			select {
			case wake <- struct{}{}:
			default: // a wake-up is pending already
			}
		}
	})
	return wake, unsub
}

// watchLive registers a reader of run id that follows it through the
// store: the channel gets the run when it starts in this process. Call
// the returned function when done.
func (s *shared) watchLive(id string) (<-chan *live.Run, func()) {
	c := make(chan *live.Run, 1)
	s.watchMu.Lock()
	s.watchers[id] = append(s.watchers[id], c)
	s.watchMu.Unlock()
	return c, func() {
		s.watchMu.Lock()
		defer s.watchMu.Unlock()
		w := slices.DeleteFunc(s.watchers[id], func(x chan *live.Run) bool { return x == c })
		if len(w) == 0 {
			delete(s.watchers, id)
			return
		}
		s.watchers[id] = w
	}
}

// notifyWatchers hands a run that starts here to the readers following
// it through the store.
func (s *shared) notifyWatchers(lr *live.Run) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	for _, c := range s.watchers[lr.ID] {
		select {
		case c <- lr:
		default: // it has this run already
		}
	}
}
