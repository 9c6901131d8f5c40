package runner

import (
	"errors"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/encoding/prototext"
)

func TestLLMAgentRequest(t *testing.T) {
	m := &fakeModel{name: "fake", reply: "reviewed"}
	reviewer := llm(t, llmagent.Config{
		Name:           "reviewer",
		Model:          m,
		Instruction:    "Review for {audience}.",
		GenerateConfig: &model.GenerateConfig{MaxOutputTokens: 64},
		OutputKey:      "review",
	})
	root := must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "root", SubAgents: []agent.Agent{mustAgent(t, "writer", "draft"), reviewer}}))
	r, db, k := newTestRunner(t, root)
	req := request(k, "write something")
	req.StateDelta = mustStruct(t, map[string]any{"audience": "kids"})
	res := mustRun(t, r, req)
	if got, want := summary(res.events), []string{"writer: draft", "reviewer: reviewed #1"}; !equalStrings(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	calls := m.calls()
	if len(calls) != 1 {
		t.Fatalf("%d model calls", len(calls))
	}
	c := calls[0]
	if c.SystemInstruction != "Review for kids." || c.Config == nil || c.Config.MaxOutputTokens != 64 {
		t.Errorf("instruction %q, config %v", c.SystemInstruction, c.Config)
	}
	var lines []string
	for _, content := range c.Contents {
		lines = append(lines, content.GetRole()+": "+strings.Join(texts(content), " | "))
	}
	if want := []string{"user: write something", "user: For context: | [writer] said: draft"}; !equalStrings(lines, want) {
		t.Errorf("contents %q, want %q", lines, want)
	}
	ev := res.events[1]
	if ev.GetContent().GetRole() != agent.RoleModel || ev.GetActions().GetStateDelta().GetFields()["review"].GetStringValue() != "reviewed #1" {
		t.Errorf("final event %v", prototext.Format(ev))
	}
	sess, _, _ := db.GetSession(t.Context(), k, store.GetOptions{})
	if got := sess.GetState().GetFields()["review"].GetStringValue(); got != "reviewed #1" {
		t.Errorf("state review = %q", got)
	}

	// The second turn (answered by the root sequence again) shows the
	// reviewer its own earlier answer as a model turn.
	mustRun(t, r, request(k, "again"))
	calls = m.calls()
	var roles []string
	for _, content := range calls[1].Contents {
		roles = append(roles, content.GetRole())
	}
	if want := []string{"user", "user", "model", "user", "user"}; !equalStrings(roles, want) {
		t.Errorf("second call roles %q, want %q", roles, want)
	}
}

func TestModelCallbacks(t *testing.T) {
	setState := func(cc agent.CallbackContext, key string) error { return cc.State().Set(key, true) }
	tests := []struct {
		name      string
		before    []llmagent.BeforeModelCallback
		after     []llmagent.AfterModelCallback
		want      []string
		wantCalls int
		wantErrs  int
		wantState []string
	}{
		{
			name: "before supplies the response",
			before: []llmagent.BeforeModelCallback{func(cc agent.CallbackContext, _ *model.Request) (*model.Response, error) {
				return &model.Response{Content: modelText("cached")}, setState(cc, "b")
			}},
			want:      []string{"root: cached"},
			wantState: []string{"b"},
		},
		{
			name: "before edits the request",
			before: []llmagent.BeforeModelCallback{func(cc agent.CallbackContext, req *model.Request) (*model.Response, error) {
				req.SystemInstruction = "edited"
				return nil, nil
			}},
			want:      []string{"root: I am root #1"},
			wantCalls: 1,
		},
		{
			name: "after replaces the response",
			after: []llmagent.AfterModelCallback{func(cc agent.CallbackContext, r *model.Response) (*model.Response, error) {
				return &model.Response{Content: modelText("replaced")}, setState(cc, "a")
			}},
			want:      []string{"root: replaced"},
			wantCalls: 1,
			wantState: []string{"a"},
		},
		{
			name:     "before fails",
			before:   []llmagent.BeforeModelCallback{func(agent.CallbackContext, *model.Request) (*model.Response, error) { return nil, errors.New("nope") }},
			want:     []string{"root: "}, // the in-band failure, stored without content
			wantErrs: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &fakeModel{name: "fake", reply: "I am root"}
			root := llm(t, llmagent.Config{Name: "root", Model: m, BeforeModelCallbacks: tc.before, AfterModelCallbacks: tc.after})
			r, _, k := newTestRunner(t, root)
			res := mustRun(t, r, request(k, "hi"))
			if got := summary(res.events); !equalStrings(got, tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
			if len(m.calls()) != tc.wantCalls || len(res.agentErrs) != tc.wantErrs {
				t.Fatalf("%d calls, errors %v", len(m.calls()), res.agentErrs)
			}
			if tc.wantCalls > 0 && tc.before != nil && m.calls()[0].SystemInstruction != "edited" {
				t.Errorf("model got instruction %q", m.calls()[0].SystemInstruction)
			}
			for _, key := range tc.wantState {
				if _, ok := res.events[0].GetActions().GetStateDelta().GetFields()[key]; !ok {
					t.Errorf("state %q missing from the event's delta", key)
				}
			}
		})
	}
}

func TestModelFailures(t *testing.T) {
	tests := []struct {
		name     string
		respond  func(*model.Request, int) ([]*model.Response, error)
		want     []string
		wantCode string
		wantErr  string
	}{
		{
			name:    "call error",
			respond: func(*model.Request, int) ([]*model.Response, error) { return nil, errors.New("503") },
			want:    []string{"root: "}, // the in-band failure, stored without content
			wantErr: "model fake: 503",
		},
		{
			name: "in-band error",
			respond: func(*model.Request, int) ([]*model.Response, error) {
				return []*model.Response{{ErrorCode: "SAFETY", ErrorMessage: "blocked"}}, nil
			},
			want:     []string{"root: "},
			wantCode: "SAFETY",
		},
		{
			name: "truncated",
			respond: func(*model.Request, int) ([]*model.Response, error) {
				return []*model.Response{{Content: modelText("half"), FinishReason: "MAX_TOKENS"}}, nil
			},
			want:     []string{"root: half"},
			wantCode: "MAX_TOKENS",
		},
		{
			name:    "no response",
			respond: func(*model.Request, int) ([]*model.Response, error) { return nil, nil },
			want:    []string{"root: "},
			wantErr: "no complete response",
		},
		{
			// A bug in a model's stream ends the agent's turn, in-band,
			// naming the model.
			name:    "stream panics",
			respond: func(*model.Request, int) ([]*model.Response, error) { panic("decoder bug") },
			want:    []string{"root: "},
			wantErr: "agent root: model fake panicked: decoder bug",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := llm(t, llmagent.Config{Name: "root", Model: &fakeModel{name: "fake", respond: tc.respond}})
			r, _, k := newTestRunner(t, root)
			res := mustRun(t, r, request(k, "hi"))
			if got := summary(res.events); !equalStrings(got, tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
			if tc.wantCode != "" && res.events[0].GetErrorCode() != tc.wantCode {
				t.Errorf("error code %q, want %q", res.events[0].GetErrorCode(), tc.wantCode)
			}
			if tc.wantErr != "" && (len(res.agentErrs) != 1 || !strings.Contains(res.agentErrs[0].Error(), tc.wantErr)) {
				t.Errorf("agent errors %v, want %q", res.agentErrs, tc.wantErr)
			}
		})
	}
}

func TestMissingInstructionStateIsAgentError(t *testing.T) {
	root := llm(t, llmagent.Config{Name: "root", Instruction: "Hi {who}"})
	r, _, k := newTestRunner(t, root)
	res := mustRun(t, r, request(k, "hi"))
	if len(res.agentErrs) != 1 || !errors.Is(res.agentErrs[0], store.ErrInvalidArgument) || !strings.Contains(res.agentErrs[0].Error(), "{who}") {
		t.Fatalf("errors %v", res.agentErrs)
	}
}

// TestTransferInsideASequence checks that the target of a transfer runs at
// once, inside the transferring agent's turn, and the sequence goes on
// after it.
func TestTransferInsideASequence(t *testing.T) {
	m := offline.New(offline.Config{})
	helper, err := llmagent.New(llmagent.Config{Name: "helper", Description: "Helps.", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	router, err := llmagent.New(llmagent.Config{Name: "router", Description: "Routes.", Model: m, SubAgents: []agent.Agent{helper}})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := workflow.NewSequential(workflow.Config{Name: "seq", SubAgents: []agent.Agent{router, mustAgent(t, "after", "done")}})
	if err != nil {
		t.Fatal(err)
	}
	r, _, k := newTestRunner(t, seq)
	res := collect(t, r.Run(t.Context(), request(k, "please transfer to helper")))
	if res.err != nil || len(res.agentErrs) > 0 {
		t.Fatalf("run: %v %v", res.err, res.agentErrs)
	}
	var authors []string
	for _, ev := range res.events {
		authors = append(authors, ev.GetAuthor())
	}
	if got, want := strings.Join(authors, " "), "router router helper after"; got != want {
		t.Fatalf("authors = %q, want %q", got, want)
	}
}

func texts(c *agentrunnerv1.Content) []string {
	var out []string
	for _, p := range c.GetParts() {
		out = append(out, p.GetText())
	}
	return out
}
