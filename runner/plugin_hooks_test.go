package runner_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/runner/tool"
	"google.golang.org/protobuf/types/known/structpb"
)

// These tests drive the plugin seam and panic recovery through the
// runner, on a real bbolt file.

// toolModel calls the tool named call on its first turn and, once the last
// content answers it, says "done: <the response>".
type toolModel struct{ call string }

func (m toolModel) Name() string { return "tool-model" }

func (m toolModel) Generate(_ context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		last := req.Contents[len(req.Contents)-1]
		for _, p := range last.GetParts() {
			if fr := p.GetFunctionResponse(); fr != nil {
				yield(&model.Response{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{
					Text: "done: " + stringFields(fr.GetResponse())}}}}, TurnComplete: true, FinishReason: "STOP"}, nil)
				return
			}
		}
		yield(&model.Response{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{
			FunctionCall: &agentrunnerv1.FunctionCall{Name: m.call}}}}}, TurnComplete: true, FinishReason: "STOP"}, nil)
	}
}

// stringFields renders the string fields of s as sorted "key=value"s.
func stringFields(s *structpb.Struct) string {
	var keys []string
	for k, v := range s.AsMap() {
		if s, ok := v.(string); ok {
			keys = append(keys, k+"="+s)
		}
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

func mustTool(t *testing.T, name string, fn func(tool.Context, struct{}) (map[string]any, error)) tool.Tool {
	t.Helper()
	return must[tool.Tool](t)(tool.NewFunction(name, "test tool", fn))
}

// customRoot is one custom agent named name running body.
func customRoot(t *testing.T, name string, body agent.RunFunc) agent.Agent {
	return must[agent.Agent](t)(agent.New(agent.Config{Name: name, Run: body}))
}

// routing is a coordinator LLM agent on the offline model with two
// sub-agents: helper, which may hand back, and strict, which may not.
func routing(t *testing.T) agent.Agent {
	mk := must[agent.Agent](t)
	m := offline.New(offline.Config{})
	helper := mk(llmagent.New(llmagent.Config{Name: "helper", Description: "Helps.", Model: m}))
	strict := mk(llmagent.New(llmagent.Config{Name: "strict", Description: "Never hands back.", Model: m, DisallowTransferToParent: true}))
	return mk(llmagent.New(llmagent.Config{Name: "coordinator", Description: "Routes.", Model: m, SubAgents: []agent.Agent{helper, strict}}))
}

// TestPanicsAreInBand checks that a panic on any goroutine the runner
// starts ends in an in-band error, never in a dead process (which would
// end this test binary).
func TestPanicsAreInBand(t *testing.T) {
	boom := func(tool.Context, struct{}) (map[string]any, error) { panic("kaboom") }
	panicky := func(name string) agent.Agent {
		return must[agent.Agent](t)(agent.New(agent.Config{Name: name, Run: func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
			return func(func(*agentrunnerv1.Event, error) bool) { panic("crash in " + name) }
		}}))
	}
	toolBranch := func(t *testing.T) agent.Agent {
		caller := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "caller", Model: toolModel{call: "boom"}, Tools: []tool.Tool{mustTool(t, "boom", boom)}}))
		return must[agent.Agent](t)(workflow.NewParallel(workflow.Config{Name: "fan", SubAgents: []agent.Agent{caller}}))
	}
	bodyBranch := func(t *testing.T) agent.Agent {
		return must[agent.Agent](t)(workflow.NewParallel(workflow.Config{Name: "fan", SubAgents: []agent.Agent{panicky("crasher")}}))
	}
	sequence := func(t *testing.T) agent.Agent {
		after := customRoot(t, "after", func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
			return func(yield func(*agentrunnerv1.Event, error) bool) { yield(saying("still here"), nil) }
		})
		return must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "seq", SubAgents: []agent.Agent{panicky("first"), after}}))
	}
	tests := []struct {
		app       string
		root      func(t *testing.T) agent.Agent
		wantKinds []string
		wantErr   string
	}{
		// Each in-band failure is stored first, as an event of its agent
		// without content ("agent: ").
		{app: "toolpanic", root: toolBranch, wantKinds: []string{"caller: call boom", "caller: response boom", "caller: ", "error"}, wantErr: "agent caller: tool boom panicked: kaboom"},
		{app: "branchpanic", root: bodyBranch, wantKinds: []string{"crasher: ", "error"}, wantErr: "agent crasher: agent crasher panicked: crash in crasher"},
		{app: "seqpanic", root: sequence, wantKinds: []string{"first: ", "error", "after: still here"}, wantErr: "agent first: agent first panicked: crash in first"},
	}
	for _, tc := range tests {
		t.Run(tc.app, func(t *testing.T) {
			f := newFeature(t, runner.Config{Root: tc.root(t)})
			f.session(t, "s1")
			res := f.run(t, ask("s1", "go"))
			if res.err != nil {
				t.Fatalf("run ended with %v; a panic must be in-band", res.err)
			}
			if !slices.Equal(res.kinds, tc.wantKinds) {
				t.Fatalf("stream %q, want %q", res.kinds, tc.wantKinds)
			}
			if len(res.errs) != 1 || res.errs[0] != tc.wantErr {
				t.Fatalf("errors %q, want %q", res.errs, tc.wantErr)
			}
			// The session is usable: the next run on it goes through the
			// same way.
			again := f.run(t, ask("s1", "again"))
			if again.err != nil || !slices.Equal(again.kinds, tc.wantKinds) {
				t.Fatalf("second run: %v %q", again.err, again.kinds)
			}
		})
	}
}

// redactor replaces every complete event whose text says "secret" before
// it is stored.
type redactor struct{}

func (redactor) Name() string { return "redactor" }

func (redactor) OnEvent(_ agent.InvocationContext, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	for _, p := range ev.GetContent().GetParts() {
		if strings.Contains(p.GetText(), "secret") {
			return &agentrunnerv1.Event{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "[redacted]"}}}}}, nil
		}
	}
	return nil, nil
}

func TestPluginReplacesEventBeforeStore(t *testing.T) {
	leaky := customRoot(t, "leaky_agent", func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			if yield(saying("the secret is 42"), nil) {
				yield(saying("nothing to hide"), nil)
			}
		}
	})
	f := newFeature(t, runner.Config{Root: leaky, Plugins: []plugin.Plugin{redactor{}}})
	f.session(t, "s1")
	res := f.run(t, ask("s1", "tell me"))
	want := []string{"leaky_agent: [redacted]", "leaky_agent: nothing to hide"}
	if res.err != nil || !slices.Equal(res.kinds, want) {
		t.Fatalf("stream %v %q, want %q", res.err, res.kinds, want)
	}
	var stored []string
	for _, ev := range f.events(t, "s1") {
		stored = append(stored, ev.GetAuthor()+": "+ev.GetContent().GetParts()[0].GetText())
		if ev.GetInvocationId() == "" || ev.GetId() == "" || ev.GetTimestamp() == nil {
			t.Errorf("stored event %v lacks ids or time", ev)
		}
	}
	if want := []string{"user: tell me", "leaky_agent: [redacted]", "leaky_agent: nothing to hide"}; !slices.Equal(stored, want) {
		t.Fatalf("stored %q, want %q", stored, want)
	}
}

// gate answers every run of a session whose state says closed, without
// running an agent.
type gate struct{}

func (gate) Name() string { return "gate" }

func (gate) BeforeRun(ctx agent.InvocationContext) (*agentrunnerv1.Content, error) {
	if v, ok := ctx.State().Get("closed"); ok && v.GetBoolValue() {
		return &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "we are closed"}}}}, nil
	}
	return nil, nil
}

func TestBeforeRunShortCircuits(t *testing.T) {
	f := newFeature(t, runner.Config{Root: routing(t), Plugins: []plugin.Plugin{gate{}}})
	f.session(t, "s1")
	closed := ask("s1", "hello")
	closed.StateDelta = must[*structpb.Struct](t)(structpb.NewStruct(map[string]any{"closed": true}))
	res := f.run(t, closed)
	if want := []string{"coordinator: we are closed"}; res.err != nil || !slices.Equal(res.kinds, want) {
		t.Fatalf("closed: %v %q, want %q", res.err, res.kinds, want)
	}
	open := ask("s1", "hello again")
	open.StateDelta = must[*structpb.Struct](t)(structpb.NewStruct(map[string]any{"closed": false}))
	res = f.run(t, open)
	if want := []string{"coordinator: offline model: you said: hello again"}; res.err != nil || !slices.Equal(res.kinds, want) {
		t.Fatalf("open: %v %q, want %q", res.err, res.kinds, want)
	}
}

// recorder records every hook it sees, and fails the hooks named in fail.
type recorder struct {
	name string
	log  *hookLog
	fail map[string]bool
}

type hookLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *hookLog) add(s string) {
	l.mu.Lock()
	l.calls = append(l.calls, s)
	l.mu.Unlock()
}

func (l *hookLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

func (r recorder) Name() string { return r.name }

func (r recorder) hook(name string) error {
	r.log.add(r.name + " " + name)
	if r.fail[name] {
		return errors.New(name + " refused")
	}
	return nil
}

func (r recorder) OnUserMessage(agent.InvocationContext, *agentrunnerv1.Content) (*agentrunnerv1.Content, error) {
	return nil, r.hook("on_user_message")
}
func (r recorder) BeforeRun(agent.InvocationContext) (*agentrunnerv1.Content, error) {
	return nil, r.hook("before_run")
}
func (r recorder) AfterRun(_ agent.InvocationContext, err error) { _ = r.hook("after_run") }
func (r recorder) OnEvent(_ agent.InvocationContext, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	return nil, r.hook("on_event")
}
func (r recorder) BeforeAgent(agent.CallbackContext) (*agentrunnerv1.Content, error) {
	return nil, r.hook("before_agent")
}
func (r recorder) AfterAgent(agent.CallbackContext) (*agentrunnerv1.Content, error) {
	return nil, r.hook("after_agent")
}
func (r recorder) BeforeModel(agent.CallbackContext, *model.Request) (*model.Response, error) {
	return nil, r.hook("before_model")
}
func (r recorder) AfterModel(agent.CallbackContext, *model.Response) (*model.Response, error) {
	return nil, r.hook("after_model")
}
func (r recorder) OnModelError(agent.CallbackContext, *model.Request, error) (*model.Response, error) {
	return nil, r.hook("on_model_error")
}
func (r recorder) BeforeTool(tool.Context, tool.Tool, map[string]any) (map[string]any, error) {
	return nil, r.hook("before_tool")
}
func (r recorder) AfterTool(tool.Context, tool.Tool, map[string]any, map[string]any) (map[string]any, error) {
	return nil, r.hook("after_tool")
}
func (r recorder) OnToolError(tool.Context, tool.Tool, map[string]any, error) (map[string]any, error) {
	return nil, r.hook("on_tool_error")
}

// recordingAgent is an LLM agent that calls one tool, with a callback of
// every kind, all writing to log.
func recordingAgent(log *hookLog) func(t *testing.T) agent.Agent {
	return func(t *testing.T) agent.Agent {
		note := func(s string) { log.add("callback " + s) }
		return must[agent.Agent](t)(llmagent.New(llmagent.Config{
			Name:  "bot",
			Model: toolModel{call: "lookup"},
			Tools: []tool.Tool{mustTool(t, "lookup", func(tool.Context, struct{}) (map[string]any, error) {
				note("tool")
				return map[string]any{"found": "yes"}, nil
			})},
			BeforeAgentCallbacks: []agent.BeforeAgentCallback{func(agent.CallbackContext) (*agentrunnerv1.Content, error) { note("before_agent"); return nil, nil }},
			AfterAgentCallbacks:  []agent.AfterAgentCallback{func(agent.CallbackContext) (*agentrunnerv1.Content, error) { note("after_agent"); return nil, nil }},
			BeforeModelCallbacks: []llmagent.BeforeModelCallback{func(agent.CallbackContext, *model.Request) (*model.Response, error) {
				note("before_model")
				return nil, nil
			}},
			AfterModelCallbacks: []llmagent.AfterModelCallback{func(agent.CallbackContext, *model.Response) (*model.Response, error) {
				note("after_model")
				return nil, nil
			}},
			BeforeToolCallbacks: []llmagent.BeforeToolCallback{func(tool.Context, tool.Tool, map[string]any) (map[string]any, error) {
				note("before_tool")
				return nil, nil
			}},
			AfterToolCallbacks: []llmagent.AfterToolCallback{func(_ tool.Context, _ tool.Tool, _, _ map[string]any, _ error) (map[string]any, error) {
				note("after_tool")
				return nil, nil
			}},
		}))
	}
}

// TestHookOrder records every hook of two plugins and every callback of an
// LLM agent's run with one tool call, in the order package plugin
// documents: plugins in list order, each before the agent's own callbacks.
func TestHookOrder(t *testing.T) {
	log := &hookLog{}
	first, second := recorder{name: "p1", log: log}, recorder{name: "p2", log: log}
	f := newFeature(t, runner.Config{Root: recordingAgent(log)(t), Plugins: []plugin.Plugin{first, second}})
	f.session(t, "s1")
	res := f.run(t, ask("s1", "find it"))
	if want := []string{"bot: call lookup", "bot: response lookup", "bot: done: found=yes"}; res.err != nil || !slices.Equal(res.kinds, want) {
		t.Fatalf("stream %v %q, want %q", res.err, res.kinds, want)
	}
	both := func(hook string) []string { return []string{"p1 " + hook, "p2 " + hook} }
	var want []string
	add := func(s ...string) { want = append(want, s...) }
	modelCall := func() {
		add(both("before_model")...)
		add("callback before_model")
		add(both("after_model")...)
		add("callback after_model")
		add(both("on_event")...)
	}
	add(both("on_user_message")...)
	add(both("before_run")...)
	add(both("before_agent")...)
	add("callback before_agent")
	modelCall()
	add(both("before_tool")...)
	add("callback before_tool", "callback tool")
	add(both("after_tool")...)
	add("callback after_tool")
	add(both("on_event")...)
	modelCall()
	add(both("after_agent")...)
	add("callback after_agent")
	add(both("after_run")...)
	if got := log.take(); !slices.Equal(got, want) {
		t.Fatalf("hooks ran in this order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPluginErrorsAreInBand checks that a failing hook is reported in-band,
// naming the plugin and the hook, and that the run goes on: with the
// original message, the original event, or (for a failed before_model)
// with the agent's turn ended and the rest of the run intact.
func TestPluginErrorsAreInBand(t *testing.T) {
	tests := []struct {
		hook      string
		wantKinds []string
		wantErr   string
	}{
		{hook: "on_user_message", wantKinds: []string{"error", "bot: call lookup", "bot: response lookup", "bot: done: found=yes"}, wantErr: "agent bot: plugin strict on_user_message: on_user_message refused"},
		{hook: "before_model", wantKinds: []string{"bot: ", "error"}, wantErr: "agent bot: plugin strict before_model: before_model refused"},
		// A tool hook's error is, as a tool callback's, the result the
		// model reads.
		{hook: "before_tool", wantKinds: []string{"bot: call lookup", "bot: response lookup", "bot: done: error=plugin strict before_tool: before_tool refused"}},
	}
	for _, tc := range tests {
		t.Run(tc.hook, func(t *testing.T) {
			log := &hookLog{}
			strict := recorder{name: "strict", log: log, fail: map[string]bool{tc.hook: true}}
			f := newFeature(t, runner.Config{Root: recordingAgent(log)(t), Plugins: []plugin.Plugin{strict}})
			f.session(t, "s1")
			res := f.run(t, ask("s1", "find it"))
			if res.err != nil || !slices.Equal(res.kinds, tc.wantKinds) {
				t.Fatalf("stream %v %q, want %q", res.err, res.kinds, tc.wantKinds)
			}
			errs := res.errs
			var wantErrs []string
			if tc.wantErr != "" {
				wantErrs = []string{tc.wantErr}
			}
			if !slices.Equal(errs, wantErrs) {
				t.Fatalf("errors %q, want %q", errs, tc.wantErr)
			}
			if got := log.take(); got[len(got)-1] != "strict after_run" {
				t.Fatalf("after_run did not close the run: %q", got)
			}
		})
	}
}
