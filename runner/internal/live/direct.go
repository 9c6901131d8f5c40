package live

import (
	"context"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

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
