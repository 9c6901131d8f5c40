package runner_test

import (
	"context"
	"fmt"
	"iter"
	"testing"

	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model"
)

// speakingModel streams two chunks in agent name's voice, then waits for
// the run to be stopped.
type speakingModel struct{ name string }

func (m speakingModel) Name() string { return "hanging-" + m.name }

func (m speakingModel) Generate(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		for i := range 2 {
			if !yield(&model.Response{Content: userContent(fmt.Sprintf("%s says %d. ", m.name, i)), Partial: true}, nil) {
				return
			}
		}
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

// TestStoppedAnswerUnderItsSpeaker: a run cut by Cancel while agents
// stream stores what each had streamed as that agent, in its branch: a
// sequential step's words under the step, not the workflow; each branch
// of a parallel agent in an event of its own, with its own words only.
func TestStoppedAnswerUnderItsSpeaker(t *testing.T) {
	cases := []struct {
		name  string
		build func(t *testing.T) agent.Agent
		want  map[string]string // author -> branch of its stop event
	}{{
		name: "sequential_step",
		build: func(t *testing.T) agent.Agent {
			step := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "step", Model: speakingModel{"step"}}))
			return must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "pipe", SubAgents: []agent.Agent{step}}))
		},
		want: map[string]string{"step": ""},
	}, {
		name: "parallel_branches",
		build: func(t *testing.T) agent.Agent {
			left := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "left", Model: speakingModel{"left"}}))
			right := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "right", Model: speakingModel{"right"}}))
			fan := must[agent.Agent](t)(workflow.NewParallel(workflow.Config{Name: "fan", SubAgents: []agent.Agent{left, right}}))
			return must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "pipe", SubAgents: []agent.Agent{fan}}))
		},
		want: map[string]string{"left": "fan.left", "right": "fan.right"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFeature(t, runner.Config{Root: tc.build(t)})
			f.session(t, "s1")
			cancelWhenSpoken(t, f, streamed("s1", "talk"), len(tc.want))
			got := map[string]string{}
			for _, ev := range f.events(t, "s1") {
				if ev.GetAuthor() == agent.UserAuthor {
					continue
				}
				if ev.GetErrorCode() != "CANCELLED" || !ev.GetInterrupted() {
					t.Errorf("stored %v; want only the stop's events, with the streamed text", ev)
					continue
				}
				words := ev.GetContent().GetParts()[0].GetText()
				if want := fmt.Sprintf("%s says 0. %s says 1. ", ev.GetAuthor(), ev.GetAuthor()); words != want {
					t.Errorf("%s's stop event holds %q; want its own words %q", ev.GetAuthor(), words, want)
				}
				if _, dup := got[ev.GetAuthor()]; dup {
					t.Errorf("two stop events of %s", ev.GetAuthor())
				}
				got[ev.GetAuthor()] = ev.GetBranch()
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("stop events (author: branch) %v; want %v", got, tc.want)
			}
		})
	}
}

// cancelWhenSpoken streams req and cancels its run once speakers agents
// have each streamed two partial events. Cancel returns once the run has
// ended, and the run executes on the reader's goroutine: it is called
// from another, while the stream is read to its end.
func cancelWhenSpoken(t *testing.T, f *feature, req runner.Request, speakers int) {
	t.Helper()
	var runID string
	var cancelled chan error // made when Cancel is called
	partials := map[string]int{}
	for u, err := range f.r.Stream(t.Context(), req) {
		if err != nil {
			if cancelled == nil {
				t.Fatal(err)
			}
			break // the cancelled run's reader gets the cancellation
		}
		if u.Run != nil && runID == "" {
			runID = u.Run.GetRunId()
		}
		if !u.Event.GetPartial() {
			continue
		}
		partials[u.Event.GetAuthor()]++
		if cancelled == nil && len(partials) == speakers && allAtLeast(partials, 2) {
			cancelled = make(chan error, 1)
			go func() {
				_, err := f.r.Cancel(t.Context(), runID)
				cancelled <- err
			}()
		}
	}
	if cancelled == nil {
		t.Fatalf("the run ended before every speaker streamed: %v", partials)
	}
	if err := <-cancelled; err != nil {
		t.Fatalf("Cancel: %v", err)
	}
}

func allAtLeast(m map[string]int, n int) bool {
	for _, v := range m {
		if v < n {
			return false
		}
	}
	return len(m) > 0
}
