package runner

import (
	"context"
	"slices"
	"sync"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
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

	// attachOnly marks the run's user event when its config does not
	// stream it: attachers get every stored event of the run, the stream
	// that started it gets what it asked for.
	attachOnly bool
}

// liveRun is a run this process admitted and has not finished: pending or
// running. It keeps the log of what the run produced, so that any number of
// readers (the stream that started it, attachers) follow it at their own
// pace while the run never waits for them.
type liveRun struct {
	id  string
	key store.SessionKey
	req Request
	// resume is set when this execution continues an interrupted run, and
	// resumedFrom is the status the run had then.
	resume      *ResumeRequest
	resumedFrom agentrunnerv1.RunStatus

	// ctx is the run's own context: it outlives the stream that started
	// the run (ON_DISCONNECT_CONTINUE, StartRun), and cancel ends it with
	// a cause (see cancelCause).
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
	log []Update
	// baseSeq is the run's last stored sequence before this execution
	// began (a resumed run's earlier events are read from the store).
	baseSeq uint64
	// readers holds a channel (capacity 1) per reader following the
	// run, which every change of log, rec or done fills: a wake-up costs
	// no allocation, and a spurious one only a look at the log.
	readers []chan struct{}
	// done is closed when the run has ended and its final record is in rec.
	done chan struct{}
	// started reports that the run left the queue (guarded by the
	// runner's registry lock).
	started bool
	// queued is closed once a queued run's pending record is stored;
	// queueErr says whether that failed. Nil for a run that never queued.
	queued   chan struct{}
	queueErr error
	// persisted reports that the record was stored before the run started
	// (a queued or resumed run), so that its end must be stored too.
	persisted bool
	// err is the run's terminal error, set before done is closed.
	err error
	// unrecorded is set when the run's final record could not be stored:
	// readers get it as the terminal error instead of a final record
	// that nobody could read back.
	unrecorded error
	// direct is the reader a run executed on its reader's goroutine
	// hands each update to as it publishes it (runInline); nil otherwise.
	direct func(Update)
	// lease is the session lease the execution holds, on a store that
	// several replicas share; nil otherwise.
	lease *heldLease
	// adopted reports a pending run that Recover found on a shared store:
	// the replica that queued it may still start it, so it runs here only
	// while its record is still pending once the lease is held.
	adopted bool
}

func newLiveRun(key store.SessionKey, rec *agentrunnerv1.Run, req Request) *liveRun {
	return &liveRun{
		id:     rec.GetRunId(),
		key:    key,
		req:    req,
		rec:    rec,
		log:    make([]Update, 0, 4), // the user event, an answer, a call and its response
		done:   make(chan struct{}),
		queued: make(chan struct{}),
	}
}

// markQueued opens the gate of a queued run: its pending record is stored
// (err nil), or could not be.
func (lr *liveRun) markQueued(err error) {
	lr.queueErr = err
	close(lr.queued)
}

// record returns a copy of the current record.
func (lr *liveRun) record() *agentrunnerv1.Run {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return proto.CloneOf(lr.rec)
}

// times returns when the run was created and when it started.
func (lr *liveRun) times() agent.RunTimes {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return agent.RunTimes{Created: lr.rec.GetCreateTime().AsTime(), Started: lr.rec.GetStartTime().AsTime()}
}

// update changes the record under the lock and wakes the readers.
func (lr *liveRun) update(fn func(rec *agentrunnerv1.Run)) {
	lr.mu.Lock()
	fn(lr.rec)
	lr.wakeLocked()
	lr.mu.Unlock()
}

func (lr *liveRun) wakeLocked() {
	for _, c := range lr.readers {
		select {
		case c <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// subscribe returns a new reader's channel, which wakes it at every
// change from now on; unsubscribe it when done.
func (lr *liveRun) subscribe() chan struct{} {
	c := make(chan struct{}, 1)
	lr.mu.Lock()
	lr.readers = append(lr.readers, c)
	lr.mu.Unlock()
	return c
}

func (lr *liveRun) unsubscribe(c chan struct{}) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if i := slices.Index(lr.readers, c); i >= 0 {
		lr.readers = slices.Delete(lr.readers, i, i+1)
	}
}

// publish appends an update to the log, wakes the readers and hands it
// to the direct reader, if the run has one. Only the run's goroutine
// publishes, so the direct reader gets the updates in the log's order.
func (lr *liveRun) publish(u Update) {
	lr.mu.Lock()
	lr.log = append(lr.log, u)
	lr.wakeLocked()
	direct := lr.direct
	lr.mu.Unlock()
	if direct != nil {
		direct(u)
	}
}

// finalRecord returns the final record of a run that has ended; readers
// share it. Before the end it is the live record (see firstRecord).
func (lr *liveRun) finalRecord() *agentrunnerv1.Run {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.rec
}

// noteStored moves the record's sequences and usage totals past an event
// the run stored.
func (lr *liveRun) noteStored(ev *agentrunnerv1.Event) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.rec.FirstSequence == 0 {
		lr.rec.FirstSequence = ev.GetSequence()
	}
	lr.rec.LastSequence = ev.GetSequence()
	addEventUsage(lr.rec, ev)
}

// addEventUsage adds a stored event's token counts to the run's totals,
// overall and of the event's author.
func addEventUsage(rec *agentrunnerv1.Run, ev *agentrunnerv1.Event) {
	u := ev.GetUsageMetadata()
	if u == nil {
		return
	}
	rec.Usage = store.AddUsage(rec.Usage, u)
	if rec.UsageByAgent == nil {
		rec.UsageByAgent = map[string]*agentrunnerv1.UsageMetadata{}
	}
	rec.UsageByAgent[ev.GetAuthor()] = store.AddUsage(rec.UsageByAgent[ev.GetAuthor()], u)
}

// finish records the final record and the terminal error, and ends the
// run for its readers. Only the first call counts.
func (lr *liveRun) finish(rec *agentrunnerv1.Run, err error) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.ended() {
		return
	}
	lr.rec = rec
	lr.err = err
	close(lr.done)
	lr.wakeLocked()
}

// endOf is what a reader gets once the run has ended: the final record
// (nil when it could not be stored) and the terminal error.
func (lr *liveRun) endOf() (*agentrunnerv1.Run, error) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.unrecorded != nil {
		return nil, lr.unrecorded
	}
	return lr.rec, lr.err
}

// ended reports whether the run has ended.
func (lr *liveRun) ended() bool {
	select {
	case <-lr.done:
		return true
	default:
		return false
	}
}

// cancelling reports whether the run was told to stop, or its caller
// went away and it is about to be, and it is unwinding.
func (lr *liveRun) cancelling() bool {
	if lr.ctx == nil || lr.ended() {
		return false
	}
	return lr.ctx.Err() != nil || (lr.readerCtx != nil && lr.readerCtx.Err() != nil)
}

// snapshot returns the log from index from on, the final record once the
// run has ended (else nil; it is never changed, and readers share it),
// and whether it has.
func (lr *liveRun) snapshot(from int) ([]Update, *agentrunnerv1.Run, bool) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	var items []Update
	if from < len(lr.log) {
		items = lr.log[from:len(lr.log):len(lr.log)]
	}
	var final *agentrunnerv1.Run
	ended := lr.ended()
	if ended {
		final = lr.rec
	}
	return items, final, ended
}
