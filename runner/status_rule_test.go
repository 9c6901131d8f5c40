package runner_test

import (
	"context"
	"errors"
	"iter"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model"
)

// gatedModel answers after wait is closed (nil: at once), then closes
// done. fail makes its answer a failure: an event with an error_code, as
// a model that failed after its retries gives (inBand: an in-band error
// instead).
type gatedModel struct {
	name         string
	wait, done   chan struct{}
	fail, inBand bool
}

func (m gatedModel) Name() string { return "gated-" + m.name }

func (m gatedModel) Generate(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if m.done != nil {
			defer close(m.done)
		}
		if m.wait != nil {
			select {
			case <-m.wait:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
		switch {
		case m.inBand:
			yield(nil, errors.New("model unavailable"))
		case m.fail:
			yield(&model.Response{ErrorCode: "UNAVAILABLE", ErrorMessage: "model unavailable after 3 attempts", TurnComplete: true}, nil)
		default:
			yield(&model.Response{Content: userContent(m.name + " answers"), TurnComplete: true, FinishReason: "STOP"}, nil)
		}
	}
}

// TestRunStatusRule: a run whose agents return is FAILED when any
// agent's last step failed and nothing it did later recovered, whatever
// the kind of agent above it and whichever branch ends last: a parallel
// agent with one failing branch, in both orders; a sequential agent
// whose first step fails (an error event, or an in-band error) and whose
// next step answers. A run whose failing agent goes on to answer is
// SUCCEEDED.
func TestRunStatusRule(t *testing.T) {
	llm := func(t *testing.T, m gatedModel) agent.Agent {
		return must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: m.name, Model: m}))
	}
	cases := []struct {
		name  string
		build func(t *testing.T) agent.Agent
		want  agentrunnerv1.RunStatus
	}{{
		name: "parallel_failing_branch_ends_last",
		build: func(t *testing.T) agent.Agent {
			goodDone := make(chan struct{})
			return must[agent.Agent](t)(workflow.NewParallel(workflow.Config{Name: "fan", SubAgents: []agent.Agent{
				llm(t, gatedModel{name: "good", done: goodDone}), llm(t, gatedModel{name: "bad", wait: goodDone, fail: true})}}))
		},
		want: agentrunnerv1.RunStatus_RUN_STATUS_FAILED,
	}, {
		name: "parallel_failing_branch_ends_first",
		build: func(t *testing.T) agent.Agent {
			badDone := make(chan struct{})
			return must[agent.Agent](t)(workflow.NewParallel(workflow.Config{Name: "fan", SubAgents: []agent.Agent{
				llm(t, gatedModel{name: "good", wait: badDone}), llm(t, gatedModel{name: "bad", done: badDone, fail: true})}}))
		},
		want: agentrunnerv1.RunStatus_RUN_STATUS_FAILED,
	}, {
		name: "sequential_first_step_fails",
		build: func(t *testing.T) agent.Agent {
			return must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "steps", SubAgents: []agent.Agent{
				llm(t, gatedModel{name: "bad", fail: true}), llm(t, gatedModel{name: "good"})}}))
		},
		want: agentrunnerv1.RunStatus_RUN_STATUS_FAILED,
	}, {
		name: "sequential_first_step_fails_in_band",
		build: func(t *testing.T) agent.Agent {
			return must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "steps", SubAgents: []agent.Agent{
				llm(t, gatedModel{name: "bad", inBand: true}), llm(t, gatedModel{name: "good"})}}))
		},
		want: agentrunnerv1.RunStatus_RUN_STATUS_FAILED,
	}, {
		name: "loop_agent_recovers_on_its_next_pass",
		build: func(t *testing.T) agent.Agent {
			return must[agent.Agent](t)(workflow.NewLoop(workflow.LoopConfig{Name: "passes", MaxIterations: 2, SubAgents: []agent.Agent{
				must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "flaky", Model: &flakyModel{}}))}}))
		},
		want: agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFeature(t, runner.Config{Root: tc.build(t)})
			f.session(t, "s1")
			res := f.run(t, ask("s1", "go"))
			if res.err != nil {
				t.Fatal(res.err)
			}
			if got := res.final(t); got.GetStatus() != tc.want {
				t.Errorf("run ended %v (%v), events %q; want %v", got.GetStatus(), got.GetError(), res.kinds, tc.want)
			}
		})
	}
}

// flakyModel fails its first call (an error event) and answers the next.
type flakyModel struct{ calls int }

func (m *flakyModel) Name() string { return "flaky" }

func (m *flakyModel) Generate(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		m.calls++
		if m.calls == 1 {
			yield(&model.Response{ErrorCode: "UNAVAILABLE", ErrorMessage: "try again", TurnComplete: true}, nil)
			return
		}
		yield(&model.Response{Content: userContent("flaky answers"), TurnComplete: true, FinishReason: "STOP"}, nil)
	}
}
