package runner

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"github.com/agentrunner/agentrunner/store"
)

// eventLines renders events as "author: part | part", calls and responses
// included.
func eventLines(events []*agentrunnerv1.Event) []string {
	out := make([]string, 0, len(events))
	for _, ev := range events {
		out = append(out, ev.GetAuthor()+": "+strings.TrimPrefix(contentLines([]*agentrunnerv1.Content{ev.GetContent()})[0], ev.GetContent().GetRole()+": "))
	}
	return out
}

// script answers the n-th model call with the n-th content; calls beyond
// the script get "unscripted".
func script(contents ...*agentrunnerv1.Content) func(*model.Request, int) ([]*model.Response, error) {
	return func(_ *model.Request, n int) ([]*model.Response, error) {
		if n > len(contents) {
			return []*model.Response{{Content: modelText("unscripted"), TurnComplete: true}}, nil
		}
		return []*model.Response{{Content: contents[n-1], TurnComplete: true, FinishReason: "STOP"}}, nil
	}
}

func mustTool(t *testing.T, name string, fn func(tool.Context, map[string]any) (map[string]any, error)) tool.Tool {
	t.Helper()
	return must[tool.Tool](t)(tool.NewFunction(name, "Test tool "+name+".", fn))
}

// toolCallCase is one model answer calling tools: the tools, the
// callbacks, the model's script, and what must come of it.
type toolCallCase struct {
	name      string
	tools     func(t *testing.T) []tool.Tool
	before    []llmagent.BeforeToolCallback
	after     []llmagent.AfterToolCallback
	script    []*agentrunnerv1.Content
	want      []string
	wantCalls int
	// wantErrs are the in-band errors: a panic is a bug, so the caller
	// hears of it besides the model.
	wantErrs []string
	check    func(t *testing.T, res result, db store.SessionKey, m *fakeModel)
}

// runToolCallCase runs tc on a fresh runner and store and checks it.
func runToolCallCase(t *testing.T, tc toolCallCase) {
	t.Helper()
	m := &fakeModel{name: "fake", respond: script(tc.script...)}
	root := llm(t, llmagent.Config{Name: "root", Model: m, Tools: tc.tools(t), BeforeToolCallbacks: tc.before, AfterToolCallbacks: tc.after})
	db := newTestStore(t)
	n := 0
	r := must[*Runner](t)(New(Config{AppName: testApp, Root: root, Store: db, NewID: func() string { n++; return fmt.Sprintf("id-%d", n) }}))
	k := newSession(t, db, "u1", "s1")
	res := mustRun(t, r, request(k, "go"))
	if got := eventLines(res.events); !equalStrings(got, tc.want) {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
	}
	var errs []string
	for _, e := range res.agentErrs {
		errs = append(errs, e.Error())
	}
	if !equalStrings(errs, tc.wantErrs) || len(m.calls()) != tc.wantCalls {
		t.Fatalf("%d model calls (want %d), errors %q (want %q)", len(m.calls()), tc.wantCalls, errs, tc.wantErrs)
	}
	if tc.check != nil {
		tc.check(t, res, k, m)
	}
}

// TestToolCallsConcurrently checks that several calls of one answer run
// concurrently and are answered in call order, and that failures, unknown
// tools and panics go to the model.
func TestToolCallsConcurrently(t *testing.T) {
	fastDone := make(chan struct{})
	slow := func(t *testing.T) tool.Tool {
		// slow returns only once fast has run: sequential calls in call
		// order would wait here until the bound and fail.
		return mustTool(t, "slow", func(tool.Context, map[string]any) (map[string]any, error) {
			select {
			case <-fastDone:
				return map[string]any{"ok": "slow"}, nil
			case <-time.After(10 * time.Second):
				return nil, errors.New("fast never ran: calls are not concurrent")
			}
		})
	}
	fast := func(t *testing.T) tool.Tool {
		return mustTool(t, "fast", func(tool.Context, map[string]any) (map[string]any, error) {
			close(fastDone)
			return map[string]any{"ok": "fast"}, nil
		})
	}
	explode := func(t *testing.T) tool.Tool {
		return mustTool(t, "explode", func(tool.Context, map[string]any) (map[string]any, error) { panic("boom") })
	}
	runToolCallCase(t, toolCallCase{
		name:  "parallel calls run concurrently and are answered in call order; failures go to the model",
		tools: func(t *testing.T) []tool.Tool { return []tool.Tool{slow(t), fast(t), explode(t)} },
		script: []*agentrunnerv1.Content{
			content(agent.RoleModel, call("1", "slow", nil), call("2", "fast", nil), call("3", "explode", nil), call("4", "nope", nil)),
			modelText("done"),
		},
		want: []string{
			"root: call 1 slow | call 2 fast | call 3 explode | call 4 nope",
			`root: response 1 {"ok":"slow"} | response 2 {"ok":"fast"} | response 3 {"error":"tool explode panicked: boom"} | ` +
				`response 4 {"error":"tool \"nope\" not found; available tools: [\"explode\",\"fast\",\"slow\"]"}`,
			"root: ", // the tool's panic, in band and stored
			"root: done",
		},
		wantCalls: 2,
		wantErrs:  []string{"agent root: tool explode panicked: boom"},
		check: func(t *testing.T, res result, _ store.SessionKey, m *fakeModel) {
			last := m.calls()[1].Contents
			if got := contentLines(last[len(last)-1:]); !strings.HasPrefix(got[0], "user: response 1 ") {
				t.Errorf("second request ends with %q", got)
			}
		},
	})
}

// TestToolCallbacks checks that before- and after-tool callbacks replace
// a call and an outcome.
func TestToolCallbacks(t *testing.T) {
	var ranA bool
	runToolCallCase(t, toolCallCase{
		name: "callbacks replace a call and an outcome",
		tools: func(t *testing.T) []tool.Tool {
			return []tool.Tool{
				mustTool(t, "a", func(tool.Context, map[string]any) (map[string]any, error) { ranA = true; return nil, nil }),
				mustTool(t, "b", func(tool.Context, map[string]any) (map[string]any, error) { return nil, errors.New("b failed") }),
			}
		},
		before: []llmagent.BeforeToolCallback{func(_ tool.Context, tl tool.Tool, args map[string]any) (map[string]any, error) {
			if tl.Name() == "a" {
				return map[string]any{"cached": args["q"]}, nil
			}
			return nil, nil
		}},
		after: []llmagent.AfterToolCallback{func(ctx tool.Context, tl tool.Tool, _, _ map[string]any, err error) (map[string]any, error) {
			if err != nil {
				return map[string]any{"recovered": err.Error(), "id": ctx.FunctionCallID()}, nil
			}
			return nil, nil
		}},
		script:    []*agentrunnerv1.Content{content(agent.RoleModel, call("1", "a", map[string]any{"q": "x"}), call("2", "b", nil)), modelText("ok")},
		want:      []string{"root: call 1 a | call 2 b", `root: response 1 {"cached":"x"} | response 2 {"id":"2","recovered":"b failed"}`, "root: ok"},
		wantCalls: 2,
		check: func(t *testing.T, _ result, _ store.SessionKey, _ *fakeModel) {
			if ranA {
				t.Error("tool a ran although its before-callback answered")
			}
		},
	})
}

// toolCallCases are tool calls whose cases need no shared state.
var toolCallCases = []toolCallCase{
	{
		name: "state, artifacts and actions of tools land in the response event",
		tools: func(t *testing.T) []tool.Tool {
			return []tool.Tool{
				mustTool(t, "first", func(ctx tool.Context, _ map[string]any) (map[string]any, error) {
					if _, err := ctx.Artifacts().Save(ctx, "out.txt", textPart("data")); err != nil {
						return nil, err
					}
					ctx.Actions().Escalate = true
					return nil, errors.Join(ctx.State().Set("k", "first"), ctx.State().Set("only_first", 1))
				}),
				mustTool(t, "second", func(ctx tool.Context, _ map[string]any) (map[string]any, error) {
					return nil, ctx.State().Set("k", "second")
				}),
			}
		},
		script:    []*agentrunnerv1.Content{content(agent.RoleModel, call("1", "first", nil), call("2", "second", nil)), modelText("ok")},
		want:      []string{"root: call 1 first | call 2 second", "root: response 1 {} | response 2 {}", "root: ok"},
		wantCalls: 2,
		check: func(t *testing.T, res result, _ store.SessionKey, _ *fakeModel) {
			a := res.events[1].GetActions()
			fields := a.GetStateDelta().GetFields()
			if fields["k"].GetStringValue() != "second" || fields["only_first"].GetNumberValue() != 1 || a.GetArtifactDelta()["out.txt"] != 1 || !a.GetEscalate() {
				t.Errorf("actions %v", a)
			}
		},
	},
	{
		name: "a tool that skips summarization ends the turn",
		tools: func(t *testing.T) []tool.Tool {
			return []tool.Tool{mustTool(t, "final", func(ctx tool.Context, _ map[string]any) (map[string]any, error) {
				ctx.Actions().SkipSummarization = true
				return map[string]any{"answer": 42}, nil
			})}
		},
		script:    []*agentrunnerv1.Content{content(agent.RoleModel, call("1", "final", nil))},
		want:      []string{"root: call 1 final", `root: response 1 {"answer":42}`},
		wantCalls: 1,
	},
	{
		name: "a long-running call without an interim result ends the turn",
		tools: func(t *testing.T) []tool.Tool {
			return []tool.Tool{must[tool.Tool](t)(tool.NewLongRunningFunction("approve", "", func(tool.Context, struct{}) (map[string]any, error) { return nil, nil }))}
		},
		script:    []*agentrunnerv1.Content{content(agent.RoleModel, call("", "approve", nil))},
		want:      []string{"root: call call-id-3 approve"},
		wantCalls: 1,
		check: func(t *testing.T, res result, _ store.SessionKey, _ *fakeModel) {
			if ids := res.events[0].GetLongRunningToolIds(); len(ids) != 1 || ids[0] != "call-id-3" {
				t.Errorf("long-running ids %q", ids)
			}
		},
	},
}

func TestToolCalls(t *testing.T) {
	for _, tc := range toolCallCases {
		t.Run(tc.name, func(t *testing.T) { runToolCallCase(t, tc) })
	}
}

func TestExitLoopStopsTheLoop(t *testing.T) {
	m := &fakeModel{name: "fake", respond: script(modelText("pass 1"), content(agent.RoleModel, call("x", builtin.ExitLoopName, nil)))}
	worker := llm(t, llmagent.Config{Name: "worker", Model: m, Tools: []tool.Tool{builtin.ExitLoop()}})
	after := mustAgent(t, "after", "never")
	loop := must[agent.Agent](t)(workflow.NewLoop(workflow.LoopConfig{Name: "root", MaxIterations: 5, SubAgents: []agent.Agent{worker, after}}))
	r, _, k := newTestRunner(t, loop)
	res := mustRun(t, r, request(k, "go"))
	want := []string{"worker: pass 1", "after: never", "worker: call x exit_loop", "worker: response x {}"}
	if got := eventLines(res.events); !equalStrings(got, want) {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if a := res.events[3].GetActions(); !a.GetEscalate() || !a.GetSkipSummarization() {
		t.Errorf("exit_loop response actions %v", a)
	}
	if n := len(m.calls()); n != 2 {
		t.Errorf("%d model calls, want 2 (no summary after exit_loop)", n)
	}
}

func TestLoadArtifacts(t *testing.T) {
	var seen []*model.Request
	m := &fakeModel{name: "fake", respond: func(req *model.Request, n int) ([]*model.Response, error) {
		seen = append(seen, req)
		switch n {
		case 1:
			return []*model.Response{{Content: content(agent.RoleModel, call("1", builtin.LoadArtifactsName, map[string]any{"artifact_names": []any{"notes.txt", "missing.txt"}}))}}, nil
		case 2:
			return []*model.Response{{Content: content(agent.RoleModel, call("2", builtin.LoadArtifactsName, map[string]any{"artifact_names": []any{"notes.txt"}}))}}, nil
		default:
			return []*model.Response{{Content: modelText("the notes say hello")}}, nil
		}
	}}
	root := llm(t, llmagent.Config{Name: "root", Model: m, Tools: []tool.Tool{builtin.LoadArtifacts()}})
	r, db, k := newTestRunner(t, root)
	blob := &agentrunnerv1.Part{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "text/plain", Data: []byte("hello")}}}
	if _, err := db.SaveArtifact(t.Context(), k, "notes.txt", blob); err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, r, request(k, "what do my notes say?"))
	want := []string{
		`root: call 1 load_artifacts`,
		`root: response 1 {"error":"no artifact named \"missing.txt\"; the session has [\"notes.txt\"]"}`,
		`root: call 2 load_artifacts`,
		`root: response 2 {"artifact_names":["notes.txt"],"status":"the artifacts' contents follow"}`,
		`root: the notes say hello`,
	}
	if got := eventLines(res.events); !equalStrings(got, want) {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(seen[0].SystemInstruction, `["notes.txt"]`) {
		t.Errorf("instruction does not list the artifacts: %q", seen[0].SystemInstruction)
	}
	// Only the request right after a successful load carries the content.
	for i, req := range seen {
		last := req.Contents[len(req.Contents)-1]
		loaded := len(last.GetParts()) == 2 && last.GetParts()[0].GetText() == `Artifact "notes.txt" is:` &&
			string(last.GetParts()[1].GetInlineData().GetData()) == "hello"
		if loaded != (i == 2) {
			t.Errorf("request %d: last content %v", i, last)
		}
	}
}

func TestToolLoopCountsModelCalls(t *testing.T) {
	m := &fakeModel{name: "fake", respond: func(_ *model.Request, n int) ([]*model.Response, error) {
		return []*model.Response{{Content: content(agent.RoleModel, call(fmt.Sprint(n), "again", nil))}}, nil
	}}
	again := mustTool(t, "again", func(tool.Context, map[string]any) (map[string]any, error) { return nil, nil })
	r, _, k := newTestRunner(t, llm(t, llmagent.Config{Name: "root", Model: m, Tools: []tool.Tool{again}}))
	req := request(k, "loop forever")
	req.Config = &agentrunnerv1.RunConfig{MaxLlmCalls: 3}
	res := collect(t, r.Run(t.Context(), req))
	if !errors.Is(res.err, agent.ErrMaxLLMCalls) || len(m.calls()) != 3 || len(res.events) != 6 {
		t.Fatalf("error %v after %d calls and %d events", res.err, len(m.calls()), len(res.events))
	}
}
