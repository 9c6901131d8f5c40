package agent

import (
	"context"
	"sync"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// CutCall is a model call the run's end (a cancel, a drain, the run's
// deadline) cut off while it was in flight: the provider bills it, so the
// event that says the run stopped counts it, in the name of the agent and
// branch that made it.
type CutCall struct {
	Author, Branch string
	Usage          *agentrunnerv1.UsageMetadata
	Cost           *agentrunnerv1.Cost
}

// CutCalls collects a run's cut calls from its agents, whatever their
// branch's goroutine, for the runner to store once the agents returned.
type CutCalls struct {
	mu    sync.Mutex
	calls []CutCall
}

type cutCallsKey struct{}

// WithCutCalls returns ctx with a new collector that NoteCutCall, under
// it, adds to. It travels in the context because the agents' errors do
// not reach the runner once the run is stopped (a parallel branch's are
// dropped), while the context reaches every agent.
func WithCutCalls(ctx context.Context) (context.Context, *CutCalls) {
	c := &CutCalls{}
	return context.WithValue(ctx, cutCallsKey{}, c), c
}

// NoteCutCall adds c to the collector of ctx; it reports false when ctx
// has none (an agent run outside a runner).
func NoteCutCall(ctx context.Context, c CutCall) bool {
	cc, ok := ctx.Value(cutCallsKey{}).(*CutCalls)
	if !ok {
		return false
	}
	cc.Add(c)
	return true
}

// Add adds c.
func (cc *CutCalls) Add(c CutCall) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.calls = append(cc.calls, c)
}

// Take returns the calls noted so far and forgets them.
func (cc *CutCalls) Take() []CutCall {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	out := cc.calls
	cc.calls = nil
	return out
}
