package telemetry

import (
	"strings"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// turns keeps the open agent-turn spans of each run by branch, innermost
// last, so that an agent's turn nests in the turn that called it: a
// workflow agent's, or the agent's that transferred to it (which runs
// the target inside its own turn); the first agent of a parallel branch
// in the parallel agent's. The console's trace (runner/runtrace) nests
// the same way.
//
// An agent may run again inside its own turn (a sub-agent transferring
// back to its parent): the stack keeps the outer turn, to end it and to
// parent its calls again once the inner one has ended.
type turns struct {
	mu   sync.Mutex
	runs map[string]map[string][]turn // run, branch
}

type turn struct {
	agent string
	span  *turnSpan
}

// turnSpan is an open turn's span behind a pointer, which pop compares:
// spans are interfaces, and some dynamic types are not comparable (the
// non-recording span a no-op tracer makes under a remote parent holds its
// trace state's slice), so == on them would panic.
type turnSpan struct{ trace.Span }

func newTurns() *turns { return &turns{runs: map[string]map[string][]turn{}} }

// parentBranch is the branch a parallel agent that made branch ran in:
// "<branch>.<parallel>.<child>" less its last two names; ok is false for
// the root branch.
func parentBranch(branch string) (string, bool) {
	parts := strings.Split(branch, ".")
	if branch == "" || len(parts) < 2 {
		return "", false
	}
	return strings.Join(parts[:len(parts)-2], "."), true
}

// caller returns the innermost open turn of branch or, for a branch's
// first agent, of the branches it was made in; nil when there is none
// (the run's own span is the parent then).
func (t *turns) caller(run, branch string) trace.Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	for b, ok := branch, true; ok; b, ok = parentBranch(b) {
		if st := t.runs[run][b]; len(st) > 0 {
			return st[len(st)-1].span
		}
	}
	return nil
}

// push opens agent's turn s in branch and returns the span to hand to pop
// when it ends: s, wrapped.
func (t *turns) push(run, branch, agent string, s trace.Span) trace.Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.runs[run]
	if m == nil {
		m = map[string][]turn{}
		t.runs[run] = m
	}
	w := &turnSpan{s}
	m[branch] = append(m[branch], turn{agent, w})
	return w
}

// pop removes s, the innermost open turn of branch as a rule, and returns
// the agent's turn it ran inside, if any: its own outer turn.
func (t *turns) pop(run, branch, agent string, s trace.Span) trace.Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.runs[run][branch]
	for i := len(st) - 1; i >= 0; i-- {
		if w, ok := s.(*turnSpan); ok && st[i].span == w {
			st = append(st[:i], st[i+1:]...)
			t.runs[run][branch] = st
			break
		}
	}
	for i := len(st) - 1; i >= 0; i-- {
		if st[i].agent == agent {
			return st[i].span
		}
	}
	return nil
}

// drop forgets a run's turns and returns the spans of those still open.
func (t *turns) drop(run string) []trace.Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	var open []trace.Span
	for _, st := range t.runs[run] {
		for _, x := range st {
			open = append(open, x.span)
		}
	}
	delete(t.runs, run)
	return open
}
