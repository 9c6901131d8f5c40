package live

import (
	"context"
	"fmt"
	"slices"
	"sync"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/store"
)

// Update is one element of a run stream. Exactly one field is set: Run for
// the run record (the first element and the last, with the final status),
// Event for a partial or complete event, Err for an agent's error that is
// reported in-band (an *agent.AgentError), after which the run goes on.
// A reader owns the events it gets; the final record is shared by every
// reader of the run and must not be changed.
type Update struct {
	Run   *agentrunnerv1.Run
	Event *agentrunnerv1.Event
	Err   error
}

// entry is one update of a run's log.
type entry struct {
	Update
	// attachOnly marks the run's user event when its config does not
	// stream it: attachers get every stored event of the run, the stream
	// that started it gets what it asked for.
	attachOnly bool
}

// Run is a run this process admitted and has not finished: pending or
// running. It keeps the log of what the run produced, so that any number
// of readers follow it at their own pace while the run never waits for
// them, and the run's record as it changes.
type Run struct {
	ID  string
	Key store.SessionKey

	// ctx is the run's own context: it outlives the stream that started
	// the run (ON_DISCONNECT_CONTINUE, StartRun), and cancel ends it with
	// a cause.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// readerCtx is the context of the stream that started a run which
	// its caller's going away cancels (ON_DISCONNECT_CANCEL); nil for
	// others. The cancel itself runs on another goroutine a moment after
	// the stream ends, while the caller may already have sent its next
	// message: admission reads this to know the run is on its way out.
	readerCtx context.Context

	mu sync.Mutex
	// rec is the current record; clones leave.
	rec *agentrunnerv1.Run
	// log holds every update of this execution in order. Complete events
	// are in it only once stored. With dropUnread, a partial event is in
	// it only when a reader follows the log as it is published.
	log []entry
	// dropUnread: nobody reads a partial event from the log later (the
	// run's own reader gets it directly, an attacher only the stored
	// events published before it came, and no replica hands the run a
	// reader mid-stream), so that one nobody follows is not kept: a
	// streamed answer's chunks would be held until the run ends.
	dropUnread bool
	// baseSeq is the run's last stored sequence before this execution
	// began (a resumed run's earlier events are read from the store).
	baseSeq uint64
	// readers holds a channel (capacity 1) per reader following the
	// run, which every change of log, rec or done fills: a wake-up costs
	// no allocation, and a spurious one only a look at the log.
	readers []chan struct{}
	// done is closed when the run has ended and its final record is in rec.
	done chan struct{}
	// err is the run's terminal error, set before done is closed.
	err error
	// unrecorded is set when the run's final record could not be stored:
	// readers get it as the terminal error instead of a final record
	// that nobody could read back.
	unrecorded error
	// direct is the reader a run executed on its reader's goroutine
	// hands each update to as it publishes it; nil otherwise.
	direct func(Update)
}

// New returns the live run of record rec in session key. Its context is
// parent's values without its cancellation; readerCtx, when not nil, is
// the context of a reader whose leaving cancels the run.
func New(parent context.Context, key store.SessionKey, rec *agentrunnerv1.Run, readerCtx context.Context) *Run {
	lr := &Run{
		ID:        rec.GetRunId(),
		Key:       key,
		rec:       rec,
		baseSeq:   rec.GetLastSequence(),
		log:       make([]entry, 0, 4), // the user event, an answer, a call and its response
		done:      make(chan struct{}),
		readerCtx: readerCtx,
	}
	lr.ctx, lr.cancel = context.WithCancelCause(context.WithoutCancel(parent))
	return lr
}

// Context is the run's own context.
func (lr *Run) Context() context.Context { return lr.ctx }

// Cancel stops the run with cause (see runrec's causes).
func (lr *Run) Cancel(cause error) { lr.cancel(cause) }

// ReaderGone returns a channel closed when the reader whose leaving
// cancels the run has gone; nil when there is no such reader.
func (lr *Run) ReaderGone() <-chan struct{} {
	if lr.readerCtx == nil {
		return nil
	}
	return lr.readerCtx.Done()
}

// Record returns a copy of the current record.
func (lr *Run) Record() *agentrunnerv1.Run {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.rec.CloneVT()
}

// Live returns the record itself: the final record of a run that has
// ended, which readers share, and before that the live record, which only
// the run's goroutine changes (under the lock) and others only read.
func (lr *Run) Live() *agentrunnerv1.Run {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.rec
}

// Times returns when the run was created and when it started.
func (lr *Run) Times() agent.RunTimes {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return agent.RunTimes{Created: lr.rec.GetCreateTime().AsTime(), Started: lr.rec.GetStartTime().AsTime()}
}

// Update changes the record under the lock and wakes the readers.
func (lr *Run) Update(fn func(rec *agentrunnerv1.Run)) {
	lr.mu.Lock()
	fn(lr.rec)
	lr.wakeLocked()
	lr.mu.Unlock()
}

func (lr *Run) wakeLocked() {
	for _, c := range lr.readers {
		select {
		case c <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// subscribe returns a new reader's channel, which wakes it at every
// change from now on; unsubscribe it when done.
func (lr *Run) subscribe() chan struct{} {
	c := make(chan struct{}, 1)
	lr.mu.Lock()
	lr.readers = append(lr.readers, c)
	lr.mu.Unlock()
	return c
}

// subscribeAt subscribes a reader, as subscribe does, and returns the
// log's length then: what the reader finds after it was published while
// it followed.
func (lr *Run) subscribeAt() (chan struct{}, int) {
	c := make(chan struct{}, 1)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	lr.readers = append(lr.readers, c)
	return c, len(lr.log)
}

func (lr *Run) unsubscribe(c chan struct{}) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if i := slices.Index(lr.readers, c); i >= 0 {
		lr.readers = slices.Delete(lr.readers, i, i+1)
	}
}

func (lr *Run) publish(e entry, stored bool) {
	lr.mu.Lock()
	if stored {
		runrec.Stored(lr.rec, e.Event)
	}
	if !lr.dropUnread || len(lr.readers) > 0 || !e.Event.GetPartial() {
		lr.log = append(lr.log, e)
	}
	lr.wakeLocked()
	direct := lr.direct
	lr.mu.Unlock()
	switch {
	case direct == nil:
	case e.attachOnly:
		direct(Update{}) // not for it; but its first record goes now
	default:
		direct(e.Update)
	}
}

// DropUnreadPartials tells the run that no reader will come for partial
// events it published before that reader subscribed: its primary reader is
// direct (NewDirect) and no replica may hand it one mid-stream. Partials
// nobody follows are then not kept.
func (lr *Run) DropUnreadPartials() {
	lr.mu.Lock()
	lr.dropUnread = true
	lr.mu.Unlock()
}

// WaitRecorded waits until the run's record is in the store (its first
// event, which carries it, stored) or the run has ended, and reports
// whether it got there before ctx ended.
func (lr *Run) WaitRecorded(ctx context.Context) bool {
	c := lr.subscribe()
	defer lr.unsubscribe(c)
	for {
		lr.mu.Lock()
		recorded := lr.rec.GetFirstSequence() != 0
		lr.mu.Unlock()
		if recorded {
			return true
		}
		select {
		case <-c:
		case <-lr.done:
			return true
		case <-ctx.Done():
			return false
		}
	}
}

// Stored moves the record past an event the run stored.
func (lr *Run) Stored(ev *agentrunnerv1.Event) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	runrec.Stored(lr.rec, ev)
}

// Unrecorded marks the run's end as one whose final record could not be
// stored: its readers get err as the terminal error, without a record.
func (lr *Run) Unrecorded(err error) {
	lr.mu.Lock()
	lr.unrecorded = err
	lr.mu.Unlock()
}

// Finish records the final record and the terminal error, and ends the
// run for its readers. Only the first call counts.
func (lr *Run) Finish(rec *agentrunnerv1.Run, err error) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.Ended() {
		return
	}
	lr.rec = rec
	lr.err = err
	close(lr.done)
	lr.wakeLocked()
}

// End is what a reader gets once the run has ended: the final record
// (nil when it could not be stored) and the terminal error.
func (lr *Run) End() (*agentrunnerv1.Run, error) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.unrecorded != nil {
		return nil, lr.unrecorded
	}
	return lr.rec, lr.err
}

// Done is closed when the run has ended.
func (lr *Run) Done() <-chan struct{} { return lr.done }

// Ended reports whether the run has ended.
func (lr *Run) Ended() bool {
	select {
	case <-lr.done:
		return true
	default:
		return false
	}
}

// Cancelling reports whether the run was told to stop, or its caller
// went away and it is about to be, and it is unwinding.
func (lr *Run) Cancelling() bool {
	if lr.Ended() {
		return false
	}
	return lr.ctx.Err() != nil || (lr.readerCtx != nil && lr.readerCtx.Err() != nil)
}

// snapshot returns the log from index from on and whether the run has
// ended.
func (lr *Run) snapshot(from int) ([]entry, bool) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	var items []entry
	if from < len(lr.log) {
		items = lr.log[from:len(lr.log):len(lr.log)]
	}
	return items, lr.Ended()
}

// PublishEvent publishes a partial event (see publish).
func (lr *Run) PublishEvent(ev *agentrunnerv1.Event) {
	lr.publish(entry{Update: Update{Event: ev}}, false)
}

// Commit moves the record past an event the run stored and publishes
// the event, at once for every reader: attachOnly marks the run's user
// event when the stream that started the run did not ask for it.
func (lr *Run) Commit(ev *agentrunnerv1.Event, attachOnly bool) {
	lr.publish(entry{Update: Update{Event: ev}, attachOnly: attachOnly}, true)
}

// PublishErr publishes an in-band error (see publish).
func (lr *Run) PublishErr(err error) { lr.publish(entry{Update: Update{Err: err}}, false) }

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
	// Subscribed as the live part starts: what is published from then on
	// is kept for it (see dropUnread).
	wake, liveFrom := lr.subscribeAt()
	defer lr.unsubscribe(wake)
	if rd.Primary {
		liveFrom = 0
	} else {
		lr.mu.Lock()
		base := lr.baseSeq
		lr.mu.Unlock()
		// A resumed run's earlier events are in the store only.
		if base > rd.After && !Replay(ctx, rd.Store, lr.Key, lr.ID, rd.After, base, yield) {
			return ReaderStopped
		}
	}
	return rd.followLog(ctx, lr, liveFrom, wake, yield)
}

// FollowFrom goes on following a run that a reader followed through the
// store until it started in this process: what the run produced after
// the last stored event relayed (sequence rd.After), partial events
// included, then everything it produces.
func (rd Reader) FollowFrom(ctx context.Context, lr *Run, yield func(Update, error) bool) Followed {
	wake := lr.subscribe()
	defer lr.unsubscribe(wake)
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
	return rd.followLog(ctx, lr, liveFrom, wake, yield)
}

// followLog yields the run's log from the start, waiting for more until
// the run ends, then the final record and the terminal error. Items
// before liveFrom are history to an attacher: only their stored events
// after rd.After are sent. wake is the reader's subscription.
func (rd Reader) followLog(ctx context.Context, lr *Run, liveFrom int, wake <-chan struct{}, yield func(Update, error) bool) Followed {
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
		u.Event = ev.CloneVT()
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
	yield(Update{Run: rec.CloneVT()}, nil)
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
// the run hands it each update as it publishes it (NewDirect), with
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

// NewDirect makes a direct reader lr's: the run hands it every update
// from now on. leave, when not nil, is what its leaving does to the run;
// shared is as in Reader.
func NewDirect(ctx context.Context, lr *Run, shared bool, leave func(), yield func(Update, error) bool) *Direct {
	d := &Direct{ctx: ctx, yield: yield, shared: shared, lr: lr, leave: leave}
	lr.mu.Lock()
	lr.direct = d.Deliver
	lr.mu.Unlock()
	return d
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
