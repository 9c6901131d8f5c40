package live

import (
	"context"
	"fmt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
)

// Followed is how a reader's following of a run ended.
type Followed int

const (
	FollowedToEnd Followed = iota
	ReaderStopped          // yield returned false: nothing more may be yielded
	ContextEnded           // the reader's context ended
)

// EventLister is the store a replay reads.
type EventLister interface {
	ListEvents(ctx context.Context, k store.SessionKey, after store.EventFilter, page store.Page) ([]*agentrunnerv1.Event, string, error)
}

// Reader is one reader of a run: where it reads the run's earlier events
// from, and how it gets the run's events.
type Reader struct {
	Store EventLister
	// Primary: the stream that started the run, which gets everything
	// from the start; an attacher gets the stored events after After
	// that the run produced before it came, then everything live.
	Primary bool
	After   uint64
	// Shared: the reader only reads the stored events it gets (a server
	// encodes them): it gets the run's own instances instead of copies.
	Shared bool
}

// Follow streams a live run to a reader: the record, then the run's log
// (see Reader), then the final record and the terminal error.
func (rd Reader) Follow(ctx context.Context, lr *Run, yield func(Update, error) bool) Followed {
	if !yield(Update{Run: lr.Record()}, nil) {
		return ReaderStopped
	}
	liveFrom := 0
	if !rd.Primary {
		lr.mu.Lock()
		base := lr.baseSeq
		liveFrom = len(lr.log)
		lr.mu.Unlock()
		// A resumed run's earlier events are in the store only.
		if base > rd.After && !Replay(ctx, rd.Store, lr.Key, lr.ID, rd.After, base, yield) {
			return ReaderStopped
		}
	}
	return rd.followLog(ctx, lr, liveFrom, yield)
}

// FollowFrom goes on following a run that a reader followed through the
// store until it started in this process: what the run produced after
// the last stored event relayed (sequence rd.After), partial events
// included, then everything it produces.
func (rd Reader) FollowFrom(ctx context.Context, lr *Run, yield func(Update, error) bool) Followed {
	lr.mu.Lock()
	base := lr.baseSeq
	liveFrom := 0
	for i, e := range lr.log {
		if ev := e.Event; ev != nil && !ev.GetPartial() && ev.GetSequence() <= rd.After {
			liveFrom = i + 1
		}
	}
	lr.mu.Unlock()
	if base > rd.After && !Replay(ctx, rd.Store, lr.Key, lr.ID, rd.After, base, yield) {
		return ReaderStopped
	}
	return rd.followLog(ctx, lr, liveFrom, yield)
}

// followLog yields the run's log from the start, waiting for more until
// the run ends, then the final record and the terminal error. Items
// before liveFrom are history to an attacher: only their stored events
// after rd.After are sent.
func (rd Reader) followLog(ctx context.Context, lr *Run, liveFrom int, yield func(Update, error) bool) Followed {
	wake := lr.subscribe()
	defer lr.unsubscribe(wake)
	next := 0
	for {
		items, ended := lr.snapshot(next)
		for _, e := range items {
			i := next
			next++
			if !rd.send(e, i < liveFrom, yield) {
				return ReaderStopped
			}
		}
		if ended && len(items) == 0 {
			final, termErr := lr.End()
			if final != nil && !yield(Update{Run: final}, nil) {
				return ReaderStopped
			}
			if termErr != nil {
				yield(Update{}, termErr)
			}
			return FollowedToEnd
		}
		if len(items) > 0 {
			continue // the run may have ended meanwhile: look again
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ContextEnded
		}
	}
}

// send yields one log item to the reader, unless it must not get it: an
// event stored at or before rd.After, or (in an attacher's history)
// anything but a stored event. Every reader gets its own copy of a
// stored event (the log holds the runner's instance), unless it shares
// them read-only; a partial event is the primary reader's own.
func (rd Reader) send(e entry, history bool, yield func(Update, error) bool) bool {
	u := e.Update
	ev := u.Event
	stored := ev != nil && !ev.GetPartial()
	switch {
	case rd.Primary && e.attachOnly:
		return true
	case stored && ev.GetSequence() <= rd.After:
		return true
	case history && !stored:
		return true
	case rd.Shared && rd.Primary:
	case stored || (!rd.Primary && ev != nil):
		u.Event = proto.CloneOf(ev)
	}
	return yield(u, nil)
}

// ReplayStored streams a run that is not live from the store: the
// record, its events after `after`, the record again.
func ReplayStored(ctx context.Context, s EventLister, rec *agentrunnerv1.Run, after uint64, yield func(Update, error) bool) {
	if !yield(Update{Run: rec}, nil) {
		return
	}
	if rec.GetLastSequence() > after && !Replay(ctx, s, store.RunKey(rec), rec.GetRunId(), after, rec.GetLastSequence(), yield) {
		return
	}
	yield(Update{Run: proto.CloneOf(rec)}, nil)
}

// ReplayPage is how many events a replay reads at a time.
const ReplayPage = 500

// Replay yields the run's stored events with after < sequence <= last,
// reading the store a page at a time.
func Replay(ctx context.Context, s EventLister, k store.SessionKey, runID string, after, last uint64, yield func(Update, error) bool) bool {
	for after < last {
		evs, _, err := s.ListEvents(ctx, k, store.EventFilter{AfterSequence: after}, store.Page{Size: ReplayPage})
		if err != nil {
			yield(Update{}, fmt.Errorf("replay run %s: %w", runID, err))
			return false
		}
		if len(evs) == 0 {
			return true
		}
		for _, ev := range evs {
			if ev.GetSequence() > last {
				return true
			}
			after = ev.GetSequence()
			if ev.GetInvocationId() == runID && !yield(Update{Event: ev}, nil) {
				return false
			}
		}
	}
	return true
}

// Direct is the reader of a run executed on the reader's own goroutine:
// the run hands it each update as it publishes it (Run.SetDirect), with
// no goroutine of its own and no wake-up per update.
type Direct struct {
	ctx    context.Context
	yield  func(Update, error) bool
	shared bool
	lr     *Run
	leave  func() // what the reader's leaving does to the run; nil: nothing
	// recordSent reports that the first record went out. It goes just
	// before the run's first update, which comes once the user's message
	// is stored with the record: a reader never holds the id of a run
	// that a crash would leave without a record.
	recordSent bool
	// stopped reports that the reader gets nothing more: its yield
	// returned false, or its context ended (contextEnded too).
	stopped, contextEnded bool
}

// NewDirect returns the direct reader of lr; leave, when not nil, is
// what its leaving does to the run. shared is as in Reader.
func NewDirect(ctx context.Context, lr *Run, shared bool, leave func(), yield func(Update, error) bool) *Direct {
	return &Direct{ctx: ctx, yield: yield, shared: shared, lr: lr, leave: leave}
}

// Deliver hands one update to the reader, as Follow would, unless it has
// stopped; the first record goes before the first update. An empty
// update delivers only the first record. It runs on the run's goroutine.
func (d *Direct) Deliver(u Update) {
	if d.stopped {
		return
	}
	if d.ctx.Err() != nil {
		d.stopped, d.contextEnded = true, true
		return // the caller's AfterFunc applies on_disconnect
	}
	if !d.recordSent {
		d.recordSent = true
		if !d.yield(Update{Run: d.firstRecord()}, nil) {
			d.stop()
			return
		}
	}
	if u.Run == nil && u.Event == nil && u.Err == nil {
		return
	}
	if !(Reader{Primary: true, Shared: d.shared}).send(entry{Update: u}, false, d.yield) {
		d.stop()
	}
}

// firstRecord is the record the reader gets first: a copy, or for a
// reader that shares the live record itself. Only the run's goroutine,
// which is the reader's, changes that record, so it stays as it is while
// the reader encodes it within its yield; other goroutines only read it.
func (d *Direct) firstRecord() *agentrunnerv1.Run {
	if d.shared {
		return d.lr.Live()
	}
	return d.lr.Record()
}

// stop marks the reader gone and leaves the run as on_disconnect says.
func (d *Direct) stop() {
	d.stopped = true
	if d.leave != nil {
		d.leave()
	}
}

// Leave is what the reader's going away does to the run.
func (d *Direct) Leave() {
	if d.leave != nil {
		d.leave()
	}
}

// Finish gives the reader the end of a run that has ended: the first
// record if nothing was delivered, then the final record and the terminal
// error, unless it stopped. It reports whether its context ended.
func (d *Direct) Finish() (contextEnded bool) {
	d.Deliver(Update{})
	final, termErr := d.lr.End()
	switch {
	case d.contextEnded:
		return true
	case d.stopped:
	case final != nil && !d.yield(Update{Run: final}, nil):
	case termErr != nil:
		d.yield(Update{}, termErr)
	}
	return false
}
