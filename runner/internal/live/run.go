package live

import (
	"context"
	"slices"
	"sync"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
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
	// are in it only once stored.
	log []entry
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
	return proto.CloneOf(lr.rec)
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

func (lr *Run) unsubscribe(c chan struct{}) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if i := slices.Index(lr.readers, c); i >= 0 {
		lr.readers = slices.Delete(lr.readers, i, i+1)
	}
}

// Publish appends an update to the log, wakes the readers and hands it
// to the direct reader, if the run has one. Only the run's goroutine
// publishes, so the direct reader gets the updates in the log's order.
func (lr *Run) Publish(u Update) { lr.publish(entry{Update: u}) }

// PublishAttachOnly appends the run's user event for attachers only: the
// stream that started the run did not ask for it.
func (lr *Run) PublishAttachOnly(ev *agentrunnerv1.Event) {
	lr.publish(entry{Update: Update{Event: ev}, attachOnly: true})
}

func (lr *Run) publish(e entry) {
	lr.mu.Lock()
	lr.log = append(lr.log, e)
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

// SetDirect makes fn the run's direct reader (see Publish).
func (lr *Run) SetDirect(fn func(Update)) {
	lr.mu.Lock()
	lr.direct = fn
	lr.mu.Unlock()
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

// PublishEvent publishes an event (see Publish).
func (lr *Run) PublishEvent(ev *agentrunnerv1.Event) { lr.publish(entry{Update: Update{Event: ev}}) }

// PublishErr publishes an in-band error (see Publish).
func (lr *Run) PublishErr(err error) { lr.publish(entry{Update: Update{Err: err}}) }
