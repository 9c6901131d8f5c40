package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/store"
)

func TestSequential(t *testing.T) {
	var seenByB []string
	b := mustCustom(t, agent.Config{Name: "b", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		seenByB = summary(slices.Collect(ctx.Session().Events().All()))
		return sayAll("b1")(ctx)
	}})
	root := must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "root", SubAgents: []agent.Agent{mustAgent(t, "a", "a1", "a2"), b, mustAgent(t, "c", "c1")}}))
	r, db, k := newTestRunner(t, root)
	res := mustRun(t, r, request(k, "go"))
	want := []string{"a: a1", "a: a2", "b: b1", "c: c1"}
	if got := summary(res.events); !equalStrings(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if want := []string{"user: go", "a: a1", "a: a2"}; !equalStrings(seenByB, want) {
		t.Errorf("b saw %q, want %q", seenByB, want)
	}
	_, events, _ := db.GetSession(t.Context(), k, store.GetOptions{})
	for i, ev := range events {
		if ev.GetSequence() != uint64(i+1) || ev.GetBranch() != "" {
			t.Errorf("event %d: sequence %d branch %q", i, ev.GetSequence(), ev.GetBranch())
		}
	}
}

func TestParallelBranches(t *testing.T) {
	// a yields, then signals; b waits for the signal, so a's event is
	// persisted before b looks at the session: b must still not see it.
	aDone := make(chan struct{})
	var seenByB []string
	a := mustCustom(t, agent.Config{Name: "a", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			defer close(aDone)
			yield(say("from a"), nil)
		}
	}})
	b := mustCustom(t, agent.Config{Name: "b", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			select {
			case <-aDone:
			case <-ctx.Done():
				return
			}
			if !yield(say("from b"), nil) {
				return
			}
			seenByB = summary(slices.Collect(ctx.Session().Events().All()))
		}
	}})
	var afterSaw []string
	fan := must[agent.Agent](t)(workflow.NewParallel(workflow.Config{
		Name:      "fan",
		SubAgents: []agent.Agent{a, b},
		AfterAgentCallbacks: []agent.AfterAgentCallback{func(cc agent.CallbackContext) (*agentrunnerv1.Content, error) {
			return modelText("both done"), nil
		}},
	}))
	var lastSaw []string
	last := mustCustom(t, agent.Config{Name: "last", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		lastSaw = summary(slices.Collect(ctx.Session().Events().All()))
		return sayAll("done")(ctx)
	}})
	root := must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "root", SubAgents: []agent.Agent{mustAgent(t, "intro", "intro"), fan, last}}))
	r, db, k := newTestRunner(t, root)
	res := mustRun(t, r, request(k, "go"))
	_ = afterSaw

	want := []string{"intro: intro", "a: from a", "b: from b", "fan: both done", "last: done"}
	if got := summary(res.events); !equalStrings(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	branches := map[string]string{}
	for _, ev := range res.events {
		branches[ev.GetAuthor()] = ev.GetBranch()
	}
	if branches["a"] != "fan.a" || branches["b"] != "fan.b" || branches["fan"] != "" || branches["intro"] != "" {
		t.Errorf("branches %v", branches)
	}
	if want := []string{"user: go", "intro: intro", "b: from b"}; !equalStrings(seenByB, want) {
		t.Errorf("b saw %q, want %q (not a's event)", seenByB, want)
	}
	if !slices.Contains(lastSaw, "a: from a") || !slices.Contains(lastSaw, "b: from b") {
		t.Errorf("the agent after the parallel one saw %q, want both branches", lastSaw)
	}
	_, events, _ := db.GetSession(t.Context(), k, store.GetOptions{})
	if events = slices.DeleteFunc(events, isEnd); len(events) != 6 {
		t.Fatalf("stored %q", summary(events))
	}
}

func TestNestedParallelBranch(t *testing.T) {
	inner := must[agent.Agent](t)(workflow.NewParallel(workflow.Config{Name: "inner", SubAgents: []agent.Agent{mustAgent(t, "x", "x")}}))
	outer := must[agent.Agent](t)(workflow.NewParallel(workflow.Config{Name: "outer", SubAgents: []agent.Agent{inner}}))
	r, _, k := newTestRunner(t, outer)
	res := mustRun(t, r, request(k, "go"))
	if len(res.events) != 1 || res.events[0].GetBranch() != "outer.inner.inner.x" {
		t.Fatalf("events %v", res.events)
	}
}

// blockUntilDone is a child that yields once, closes waiting once that
// event is persisted, then waits for its context to end; it closes exited
// when it returns.
func blockUntilDone(t *testing.T, name string, waiting, exited chan struct{}) agent.Agent {
	return mustCustom(t, agent.Config{Name: name, Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			defer close(exited)
			if !yield(say(name+" waiting"), nil) {
				return
			}
			close(waiting)
			<-ctx.Done()
			yield(nil, ctx.Err())
		}
	}})
}

func TestParallelStopsOnChildError(t *testing.T) {
	waiting, exited := make(chan struct{}), make(chan struct{})
	failing := mustCustom(t, agent.Config{Name: "failing", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			// Fail only once the sibling is waiting, so that the test sees
			// it cancelled rather than never started.
			select {
			case <-waiting:
			case <-ctx.Done():
				return
			}
			yield(nil, errors.New("boom"))
		}
	}})
	fan := must[agent.Agent](t)(workflow.NewParallel(workflow.Config{Name: "fan", SubAgents: []agent.Agent{failing, blockUntilDone(t, "waiter", waiting, exited)}}))
	root := must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "root", SubAgents: []agent.Agent{fan, mustAgent(t, "after", "after")}}))
	r, _, k := newTestRunner(t, root)
	res := mustRun(t, r, request(k, "go"))
	waitClosed(t, exited, "the sibling to be cancelled")
	if len(res.agentErrs) != 1 || res.agentErrs[0].Agent != "failing" {
		t.Fatalf("agent errors %v, want failing's only", res.agentErrs)
	}
	if got, want := summary(res.events), []string{"waiter: waiter waiting", "failing: ", "after: after"}; !equalStrings(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	// The branch's in-band failure is stored in its branch, as its
	// agent's events are.
	for _, ev := range res.events {
		if ev.GetAuthor() == "failing" && (ev.GetBranch() != "fan.failing" || ev.GetErrorCode() != "UNKNOWN") {
			t.Errorf("failing's event: branch %q, error_code %q; want its failure in branch fan.failing", ev.GetBranch(), ev.GetErrorCode())
		}
	}
}

func TestParallelStopLeavesNoGoroutine(t *testing.T) {
	const children = 4
	for _, stop := range []string{"cancel", "break"} {
		t.Run(stop, func(t *testing.T) {
			var subs []agent.Agent
			var exits []chan struct{}
			for i := range children {
				e := make(chan struct{})
				exits = append(exits, e)
				subs = append(subs, blockUntilDone(t, fmt.Sprintf("c%d", i), make(chan struct{}), e))
			}
			fan := must[agent.Agent](t)(workflow.NewParallel(workflow.Config{Name: "fan", SubAgents: subs}))
			r, db, k := newTestRunner(t, fan)
			// Warm the store up so that its own goroutines are counted.
			if _, err := db.AppendEvent(t.Context(), k, say("warm-up")); err != nil {
				t.Fatal(err)
			}
			before := runtime.NumGoroutine()

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var res result
			for ev, err := range r.Run(ctx, request(k, stop)) {
				if err != nil {
					res.err = err
					continue
				}
				res.events = append(res.events, ev)
				if len(res.events) == children {
					// Every child has yielded: all are running.
					if stop == "break" {
						break
					}
					cancel()
				}
			}
			for i, ch := range exits {
				waitClosed(t, ch, fmt.Sprintf("child %d to exit", i))
			}
			if stop == "cancel" && !errors.Is(res.err, context.Canceled) {
				t.Fatalf("run ended with %v, want context.Canceled", res.err)
			}
			if len(res.events) != children {
				t.Fatalf("events %q", summary(res.events))
			}
			waitGoroutines(t, before)
		})
	}
}

// waitGoroutines waits, within a bound, for the number of goroutines to
// drop back to n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLoop(t *testing.T) {
	// counter yields "n=<i>" and escalates when i reaches escalateAt (0:
	// never); it keeps its count in state.
	counter := func(t *testing.T, escalateAt int) agent.Agent {
		return mustCustom(t, agent.Config{Name: "counter", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
			return func(yield func(*agentrunnerv1.Event, error) bool) {
				v, _ := ctx.State().Get("temp:n")
				n := int(v.GetNumberValue()) + 1
				if err := ctx.State().Set("temp:n", n); err != nil {
					yield(nil, err)
					return
				}
				ev := say(fmt.Sprintf("n=%d", n))
				if n == escalateAt {
					ev.Actions = &agentrunnerv1.EventActions{Escalate: true}
				}
				if yield(ev, nil) && n == escalateAt {
					yield(say("finishing after escalating"), nil)
				}
			}
		}})
	}
	tests := []struct {
		name       string
		max        int
		escalateAt int
		want       []string
	}{
		{name: "max iterations", max: 3, want: []string{"counter: n=1", "tail: tail", "counter: n=2", "tail: tail", "counter: n=3", "tail: tail"}},
		{name: "escalate", max: 0, escalateAt: 2, want: []string{"counter: n=1", "tail: tail", "counter: n=2", "counter: finishing after escalating"}},
		{name: "escalate before max", max: 5, escalateAt: 1, want: []string{"counter: n=1", "counter: finishing after escalating"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			loop := must[agent.Agent](t)(workflow.NewLoop(workflow.LoopConfig{Name: "root", MaxIterations: tc.max, SubAgents: []agent.Agent{counter(t, tc.escalateAt), mustAgent(t, "tail", "tail")}}))
			r, _, k := newTestRunner(t, loop)
			res := mustRun(t, r, request(k, "go"))
			if got := summary(res.events); !equalStrings(got, tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWorkflowCallbacksAndInfo(t *testing.T) {
	seq := must[agent.Agent](t)(workflow.NewSequential(workflow.Config{
		Name: "seq", Description: "in order",
		SubAgents: []agent.Agent{mustAgent(t, "a", "a")},
		BeforeAgentCallbacks: []agent.BeforeAgentCallback{func(cc agent.CallbackContext) (*agentrunnerv1.Content, error) {
			if cc.AgentName() != "seq" || !strings.HasPrefix(cc.InvocationID(), "e-") {
				return nil, fmt.Errorf("callback context for %s/%s", cc.AgentName(), cc.InvocationID())
			}
			return nil, nil
		}},
	}))
	r, _, k := newTestRunner(t, seq)
	res := mustRun(t, r, request(k, "go"))
	if len(res.agentErrs) != 0 || len(res.events) != 1 {
		t.Fatalf("events %q, errors %v", summary(res.events), res.agentErrs)
	}
}
