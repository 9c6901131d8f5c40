package runner_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model"
)

// routerModel hands over to helper when the user's latest message asks
// for help, and answers itself otherwise.
type routerModel struct{}

func (routerModel) Name() string { return "router" }

func (routerModel) Generate(_ context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		last := ""
		for _, c := range req.Contents {
			if c.GetRole() == "user" && len(c.GetParts()) > 0 && c.GetParts()[0].GetText() != "" {
				last = c.GetParts()[0].GetText()
			}
		}
		if strings.Contains(last, "help") {
			yield(&model.Response{Content: transferCall("helper", ""), TurnComplete: true, FinishReason: "STOP"}, nil)
			return
		}
		yield(&model.Response{Content: userContent("coordinator answers " + last), TurnComplete: true, FinishReason: "STOP"}, nil)
	}
}

// TestNextMessageAfterFailedAgent: a transfer target whose model is down
// (its answer an event with an error_code, as after the model's retries)
// does not hold the session: the next message goes where it would have
// gone had the target not been given the turn: to the agent that
// transferred to it. A target that answered before and fails now is
// passed over too, whether its failure is an error event or in band (an
// error on the stream, which the runner stores as a content-less error
// event; see docs/runs.md).
func TestNextMessageAfterFailedAgent(t *testing.T) {
	for _, inBand := range []bool{false, true} {
		name := "error_event"
		if inBand {
			name = "in_band"
		}
		t.Run(name, func(t *testing.T) {
			helperModel := &switchModel{}
			helper := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "helper", Model: helperModel}))
			root := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "coordinator", Model: routerModel{}, SubAgents: []agent.Agent{helper}}))
			f := newFeature(t, runner.Config{Root: root})
			f.session(t, "s1")
			// The helper answers once, then its model goes down.
			steps := []struct{ msg, want string }{
				{"help me", "helper"}, {"thanks", "helper"}, {"help again", "-"}, {"hello", "coordinator"},
			}
			for i, s := range steps {
				if i == 2 {
					helperModel.down, helperModel.inBand = true, inBand
				}
				res := f.run(t, ask("s1", s.msg))
				if res.err != nil {
					t.Fatal(res.err)
				}
				if s.want == "-" {
					continue
				}
				if last := lastAnswerAuthor(res.events); last != s.want {
					t.Errorf("message %q answered by %q (%q); want %s", s.msg, last, res.kinds, s.want)
				}
			}
		})
	}
}

// switchModel answers as the helper until down, then fails: with an
// error event, or in band.
type switchModel struct{ down, inBand bool }

func (m *switchModel) Name() string { return "switch" }

func (m *switchModel) Generate(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	down, inBand := m.down, m.inBand
	return func(yield func(*model.Response, error) bool) {
		switch {
		case down && inBand:
			yield(nil, errModelDown)
		case down:
			yield(&model.Response{ErrorCode: "UNAVAILABLE", ErrorMessage: "model down after 3 attempts", TurnComplete: true}, nil)
		default:
			yield(&model.Response{Content: userContent("helper answers"), TurnComplete: true, FinishReason: "STOP"}, nil)
		}
	}
}

var errModelDown = errors.New("model down")

// lastAnswerAuthor is the author of the last agent event with text.
func lastAnswerAuthor(events []*agentrunnerv1.Event) string {
	author := ""
	for _, ev := range events {
		if ev.GetAuthor() != agent.UserAuthor && !ev.GetPartial() && len(ev.GetContent().GetParts()) > 0 && ev.GetContent().GetParts()[0].GetText() != "" {
			author = ev.GetAuthor()
		}
	}
	return author
}
