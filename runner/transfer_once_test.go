package runner_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model"
)

// transferModel hands over to the agent named to on its first call.
type transferModel struct{ to string }

func (m transferModel) Name() string { return "transfer-model" }

func (m transferModel) Generate(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		yield(&model.Response{Content: transferCall(m.to, ""), TurnComplete: true, FinishReason: "STOP"}, nil)
	}
}

// failingModel fails every call and counts them.
type failingModel struct{ calls *atomic.Int32 }

func (m failingModel) Name() string { return "failing-model" }

func (m failingModel) Generate(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		m.calls.Add(1)
		yield(nil, errors.New("model unavailable"))
	}
}

// TestTransferTargetRunsOnce: the target of a transfer runs once per
// turn, whatever its kind: a workflow agent that writes no event of its
// own, a nested one, or an LLM agent whose model call fails.
func TestTransferTargetRunsOnce(t *testing.T) {
	var steps atomic.Int32
	step := func(t *testing.T, name string) agent.Agent {
		return must[agent.Agent](t)(agent.New(agent.Config{Name: name, Run: func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
			return func(yield func(*agentrunnerv1.Event, error) bool) {
				steps.Add(1)
				yield(saying(name+" ran"), nil)
			}
		}}))
	}
	var calls atomic.Int32
	targets := map[string]func(t *testing.T) agent.Agent{
		"sequential": func(t *testing.T) agent.Agent {
			return must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "pipeline", SubAgents: []agent.Agent{step(t, "one"), step(t, "two")}}))
		},
		"parallel": func(t *testing.T) agent.Agent {
			return must[agent.Agent](t)(workflow.NewParallel(workflow.Config{Name: "pipeline", SubAgents: []agent.Agent{step(t, "one"), step(t, "two")}}))
		},
		"loop": func(t *testing.T) agent.Agent {
			return must[agent.Agent](t)(workflow.NewLoop(workflow.LoopConfig{Name: "pipeline", MaxIterations: 1, SubAgents: []agent.Agent{step(t, "one"), step(t, "two")}}))
		},
		"nested": func(t *testing.T) agent.Agent {
			inner := must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "inner", SubAgents: []agent.Agent{step(t, "one"), step(t, "two")}}))
			return must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "pipeline", SubAgents: []agent.Agent{inner}}))
		},
		"failing": func(t *testing.T) agent.Agent {
			return must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "pipeline", Model: failingModel{&calls}}))
		},
	}
	for kind, target := range targets {
		t.Run(kind, func(t *testing.T) {
			steps.Store(0)
			calls.Store(0)
			triage := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "triage", Model: transferModel{to: "pipeline"}, SubAgents: []agent.Agent{target(t)}}))
			f := newFeature(t, runner.Config{Root: triage})
			f.session(t, "s1")
			res := f.run(t, ask("s1", "go"))
			if res.err != nil {
				t.Fatal(res.err)
			}
			if kind == "failing" {
				if calls.Load() != 1 || len(res.errs) != 1 {
					t.Errorf("the failing target made %d model calls and streamed %d errors (%q); want 1 and 1", calls.Load(), len(res.errs), res.kinds)
				}
				return
			}
			if n := steps.Load(); n != 2 {
				t.Errorf("the pipeline's steps ran %d times in all, want 2 (each once): %q", n, res.kinds)
			}
			if got := strings.Count(strings.Join(res.kinds, "\n"), " ran"); got != 2 {
				t.Errorf("events %q, want each step's once", res.kinds)
			}
		})
	}
}
