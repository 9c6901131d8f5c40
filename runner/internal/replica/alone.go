package replica

import (
	"context"
	"errors"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/live"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/store"
)

// alone is the mode of a store that one process owns: the process's
// registry is the only rule, so there is nothing to lease, queue or
// follow elsewhere. Only Recover's claim gate counts.
type alone struct {
	store Store
	host  Host
	gate  claimGate
}

func (*alone) Start()                                                           {}
func (*alone) Stop()                                                            {}
func (*alone) Take(context.Context, store.SessionKey, string, Expect) error     { return nil }
func (*alone) With(ctx context.Context, _ string) context.Context               { return ctx }
func (*alone) QueuesInStore() bool                                              { return false }
func (*alone) InterruptHolder(context.Context, store.SessionKey, string)        {}
func (*alone) QueuedAhead(context.Context, store.SessionKey) (bool, error)      { return false, nil }
func (*alone) RecoverPending(context.Context, *agentrunnerv1.Run) (bool, error) { return true, nil }
func (*alone) Sweep(context.Context) (int, error)                               { return 0, nil }
func (a *alone) SetClaimGate(g ClaimGate)                                       { a.gate.set(g) }
func (a *alone) Reserve(done <-chan struct{})                                   { bindClaim(a.gate.reserve(), done) }

func (*alone) RunElsewhere(_ context.Context, _ string, _ bool, err error) bool {
	return errors.Is(err, runrec.ErrTaken)
}

func (*alone) QueuesElsewhere(agentrunnerv1.MultitaskStrategy, error) bool { return false }

func (*alone) Enqueue(context.Context, *agentrunnerv1.Run, bool) error {
	return errors.New("a store of one process has no run queue")
}

func (a *alone) Follow(ctx context.Context, rec *agentrunnerv1.Run, after uint64, yield func(live.Update, error) bool) live.Followed {
	live.ReplayStored(ctx, a.store, rec, after, yield)
	return live.FollowedToEnd
}

func (*alone) StreamQueued(_ context.Context, rec *agentrunnerv1.Run, _ agentrunnerv1.OnDisconnect, yield func(live.Update, error) bool) {
	yield(live.Update{}, errors.New("run "+rec.GetRunId()+" is not queued in this store"))
}

func (*alone) Cancel(_ context.Context, rec *agentrunnerv1.Run) (*agentrunnerv1.Run, error) {
	return rec, nil // not live in the only process: it has ended
}

// RecoverRunning: no other process can be running it.
func (a *alone) RecoverRunning(ctx context.Context, rec *agentrunnerv1.Run) (bool, error) {
	return true, a.host.MarkInterrupted(ctx, rec)
}

// Release: the registry is the only rule.
func (*alone) Release(_ store.SessionKey, _ string, unregister, finish func()) {
	unregister()
	finish()
}
