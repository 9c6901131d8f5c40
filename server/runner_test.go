package server

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/examples/demo"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"
)

// These tests run the real runner behind the real gRPC server, on a real
// bbolt file: what a client of RunnerService sees.

// withRunnerApps serves the apps built by build over the env's store.
func withRunnerApps(t *testing.T, build ...func(t *testing.T) apps.App) envOption {
	return func(c *Config) {
		// The runners search the memory the server serves, as in
		// cmd/agentrunner.
		var mem memory.Service
		if ix, ok := c.Store.(memory.Indexer); ok {
			mem = memory.NewIndex(ix)
		}
		reg, err := apps.NewRegistry(apps.Config{Store: c.Store.(runner.Store), Memory: mem})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range build {
			if _, err := reg.Register(b(t)); err != nil {
				t.Fatal(err)
			}
		}
		c.Apps = RunnerApps(reg)
	}
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// llmApp is a coordinator LLM agent on the offline model with two
// sub-agents: helper, which may hand back, and strict, which may not.
func llmApp(t *testing.T) apps.App {
	mk := must[agent.Agent](t)
	m := offline.New(offline.Config{})
	helper := mk(llmagent.New(llmagent.Config{Name: "helper", Description: "Helps.", Model: m}))
	strict := mk(llmagent.New(llmagent.Config{Name: "strict", Description: "Never hands back.", Model: m, DisallowTransferToParent: true}))
	root := mk(llmagent.New(llmagent.Config{Name: "coordinator", Description: "Routes.", Model: m, SubAgents: []agent.Agent{helper, strict}}))
	return apps.App{Name: "llm", Root: root}
}

func say(text string) *agentrunnerv1.Event {
	return &agentrunnerv1.Event{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}}}
}

// customApp has one custom agent running body.
func customApp(name string, body agent.RunFunc) func(t *testing.T) apps.App {
	return func(t *testing.T) apps.App {
		root := must[agent.Agent](t)(agent.New(agent.Config{Name: name + "_agent", Run: body}))
		return apps.App{Name: name, Root: root}
	}
}

// runResult is a Run stream as a client sees it.
type runResult struct {
	events  []*agentrunnerv1.Event
	errors  []*agentrunnerv1.Status
	kinds   []string // "author: text" per complete event, "partial", "error"
	status  error
	answers []string // authors of complete non-user events
	runs    []*agentrunnerv1.Run
}

func (e *env) run(t *testing.T, ctx context.Context, req *servicev1.RunRequest) runResult {
	t.Helper()
	stream, err := e.runner.Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resps, err := collectRun(t, stream)
	res := runResult{status: err}
	for _, r := range resps {
		switch {
		case r.GetRun() != nil:
			res.runs = append(res.runs, r.GetRun())
		case r.GetError() != nil:
			res.errors = append(res.errors, r.GetError())
			res.kinds = append(res.kinds, "error")
		case r.GetEvent().GetPartial():
			res.events = append(res.events, r.GetEvent())
			res.kinds = append(res.kinds, "partial")
		case agent.IsEnd(r.GetEvent()) && r.GetEvent().GetActions() == nil:
			// The end the runner stores for a custom agent under another
			// that did not mark its last event: these tests are about what
			// agents say (TestCustomAgentEndRecorded is about the ends).
		default:
			ev := r.GetEvent()
			res.events = append(res.events, ev)
			var text []string
			for _, p := range ev.GetContent().GetParts() {
				switch {
				case p.GetText() != "":
					text = append(text, p.GetText())
				case p.GetFunctionCall() != nil:
					text = append(text, "call "+p.GetFunctionCall().GetName())
				case p.GetFunctionResponse() != nil:
					text = append(text, "response "+p.GetFunctionResponse().GetName())
				}
			}
			res.kinds = append(res.kinds, ev.GetAuthor()+": "+strings.Join(text, " "))
			if ev.GetAuthor() != "user" {
				res.answers = append(res.answers, ev.GetAuthor())
			}
		}
	}
	return res
}

func runReq(app, session, msg string) *servicev1.RunRequest {
	return &servicev1.RunRequest{AppName: app, UserId: "u1", SessionId: session, NewMessage: text(msg)}
}

// TestRunWithRunner is the Run RPC's behaviour with the real runner, one
// row per scenario, each on its own session.
func TestRunWithRunner(t *testing.T) {
	flaky := customApp("flaky", func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			_ = yield(say("first"), nil) &&
				yield(nil, errors.New("tool exploded")) &&
				yield(say("after the error"), nil)
		}
	})
	e := newEnv(t, withRunnerApps(t, llmApp, func(*testing.T) apps.App { return demo.App() }, flaky, callbackApp, loopApp, approvalApp))

	tests := []struct {
		name  string
		turns []*servicev1.RunRequest // run in order on one session
		check func(t *testing.T, last runResult, sess *servicev1.GetSessionResponse)
	}{
		{
			name:  "root answers a new session",
			turns: []*servicev1.RunRequest{runReq("llm", "", "hello")},
			check: func(t *testing.T, last runResult, _ *servicev1.GetSessionResponse) {
				if want := []string{"coordinator: offline model: you said: hello"}; !slices.Equal(last.kinds, want) {
					t.Errorf("stream = %q, want %q", last.kinds, want)
				}
			},
		},
		{
			name:  "a transferred agent answers in the same run and the next turn",
			turns: []*servicev1.RunRequest{runReq("llm", "", "transfer to helper"), runReq("llm", "", "thanks")},
			check: func(t *testing.T, last runResult, sess *servicev1.GetSessionResponse) {
				if !slices.Equal(last.answers, []string{"helper"}) {
					t.Errorf("second turn answered by %v, want helper; stream %q", last.answers, last.kinds)
				}
				var authors []string
				for _, ev := range sess.GetEvents() {
					authors = append(authors, ev.GetAuthor())
				}
				if want := "user coordinator coordinator helper user helper"; strings.Join(authors, " ") != want {
					t.Errorf("stored authors = %q, want %q", authors, want)
				}
			},
		},
		{
			name:  "an agent that disallows transfer to parent is not resumed",
			turns: []*servicev1.RunRequest{runReq("llm", "", "transfer to strict"), runReq("llm", "", "again")},
			check: func(t *testing.T, last runResult, _ *servicev1.GetSessionResponse) {
				if !slices.Equal(last.answers, []string{"coordinator"}) {
					t.Errorf("second turn answered by %v, want the root; stream %q", last.answers, last.kinds)
				}
			},
		},
		{
			name: "partial events are streamed, never stored",
			turns: []*servicev1.RunRequest{{AppName: "llm", UserId: "u1", NewMessage: text("stream this please"),
				RunConfig: &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}}},
			check: func(t *testing.T, last runResult, sess *servicev1.GetSessionResponse) {
				if n := strings.Count(strings.Join(last.kinds, "|"), "partial"); n < 2 {
					t.Errorf("stream %q has %d partial events, want several", last.kinds, n)
				}
				for _, ev := range sess.GetEvents() {
					if ev.GetPartial() {
						t.Errorf("stored a partial event: %v", ev)
					}
				}
				if n := len(sess.GetEvents()); n != 2 {
					t.Errorf("stored %d events, want the user's and one complete answer", n)
				}
			},
		},
		{
			name:  "workflow agents run in order and their state lands, temp: keys do not",
			turns: []*servicev1.RunRequest{runReq("demo", "", "one two three")},
			check: func(t *testing.T, last runResult, sess *servicev1.GetSessionResponse) {
				order := strings.Join(last.answers, " ")
				for _, want := range []string{"greeter echo", "tick tick tick tick summary"} {
					if !strings.Contains(order, want) {
						t.Errorf("authors %q lack %q", order, want)
					}
				}
				state := sess.GetSession().GetState().GetFields()
				if state["words"].GetNumberValue() != 3 || state["letters"].GetNumberValue() != 11 {
					t.Errorf("state = %v, want words 3 and letters 11", state)
				}
				for k := range state {
					if strings.HasPrefix(k, "temp:") {
						t.Errorf("temp: key %q was stored", k)
					}
				}
			},
		},
		{
			name:  "a custom root answers every turn",
			turns: []*servicev1.RunRequest{runReq("demo", "", "hi"), runReq("demo", "", "hi again")},
			check: func(t *testing.T, last runResult, _ *servicev1.GetSessionResponse) {
				if len(last.answers) == 0 || last.answers[0] != "greeter" || !strings.Contains(last.kinds[0], "turn 2") {
					t.Errorf("second turn = %q, want the greeter's turn 2", last.kinds)
				}
			},
		},
		{
			name:  "an agent error arrives in-band and the run goes on",
			turns: []*servicev1.RunRequest{runReq("flaky", "", "go")},
			check: func(t *testing.T, last runResult, sess *servicev1.GetSessionResponse) {
				// The error is stored first, as a content-less event.
				if want := []string{"flaky_agent: first", "flaky_agent: ", "error", "flaky_agent: after the error"}; !slices.Equal(last.kinds, want) {
					t.Errorf("stream = %q, want %q", last.kinds, want)
				}
				if len(last.errors) == 1 && !strings.Contains(last.errors[0].GetMessage(), "tool exploded") {
					t.Errorf("in-band error = %v", last.errors[0])
				}
				if n := len(sess.GetEvents()); n != 4 {
					t.Errorf("stored %d events, want 4", n)
				}
			},
		},
		{
			name:  "a before-agent callback short-circuits the agent",
			turns: []*servicev1.RunRequest{runReq("cb", "", "stop right there")},
			check: func(t *testing.T, last runResult, _ *servicev1.GetSessionResponse) {
				if want := []string{"cb_agent: blocked by the before callback"}; !slices.Equal(last.kinds, want) {
					t.Errorf("stream = %q, want %q", last.kinds, want)
				}
			},
		},
		{
			name:  "an after-agent callback appends an event",
			turns: []*servicev1.RunRequest{runReq("cb", "", "hello")},
			check: func(t *testing.T, last runResult, sess *servicev1.GetSessionResponse) {
				if want := []string{"cb_agent: body", "cb_agent: appended by the after callback"}; !slices.Equal(last.kinds, want) {
					t.Errorf("stream = %q, want %q", last.kinds, want)
				}
				if got := sess.GetSession().GetState().GetFields()["after_ran"].GetBoolValue(); !got {
					t.Errorf("the after callback's state change was not stored: %v", sess.GetSession().GetState())
				}
			},
		},
		{
			name:  "parallel children run in their own branches",
			turns: []*servicev1.RunRequest{runReq("demo", "", "a b")},
			check: func(t *testing.T, _ runResult, sess *servicev1.GetSessionResponse) {
				branches := map[string]string{}
				for _, ev := range sess.GetEvents() {
					if a := ev.GetAuthor(); a == "words" || a == "letters" {
						branches[a] = ev.GetBranch()
					}
				}
				if !strings.HasSuffix(branches["words"], ".words") || !strings.HasSuffix(branches["letters"], ".letters") ||
					branches["words"] == branches["letters"] {
					t.Errorf("branches = %v, want one per parallel child", branches)
				}
			},
		},
		{
			name:  "a loop stops when an event escalates",
			turns: []*servicev1.RunRequest{runReq("demo", "", "count down from three")},
			check: func(t *testing.T, last runResult, _ *servicev1.GetSessionResponse) {
				// The countdown loop allows 5 passes; its tick counts down
				// from min(words, 3) and escalates at zero, after 4.
				if n := strings.Count(strings.Join(last.answers, " "), "tick"); n != 4 {
					t.Errorf("%d ticks in %q, want 4", n, last.answers)
				}
			},
		},
		{
			name:  "a loop stops at max iterations",
			turns: []*servicev1.RunRequest{runReq("loop", "", "spin")},
			check: func(t *testing.T, last runResult, _ *servicev1.GetSessionResponse) {
				if want := []string{"spin", "spin", "spin"}; !slices.Equal(last.answers, want) {
					t.Errorf("answers = %q, want %q", last.answers, want)
				}
			},
		},
		{
			name: "a function response is routed to the agent that made the call",
			turns: []*servicev1.RunRequest{runReq("approval", "", "please approve"), {AppName: "approval", UserId: "u1",
				NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionResponse{
					FunctionResponse: &agentrunnerv1.FunctionResponse{Id: "approval-1", Name: "ask_manager", Response: mustStruct(t, map[string]any{"approved": true})}}}}}}},
			check: func(t *testing.T, last runResult, _ *servicev1.GetSessionResponse) {
				if want := []string{"asker: ask_manager answered"}; !slices.Equal(last.kinds, want) {
					t.Errorf("stream = %q, want %q (the caller, not the root)", last.kinds, want)
				}
			},
		},
		{
			name: "the user event is streamed when asked, with its sequence",
			turns: []*servicev1.RunRequest{{AppName: "flaky", UserId: "u1", NewMessage: text("me first"),
				RunConfig: &agentrunnerv1.RunConfig{StreamUserEvent: true}}},
			check: func(t *testing.T, last runResult, _ *servicev1.GetSessionResponse) {
				if len(last.events) == 0 || last.events[0].GetAuthor() != "user" || last.events[0].GetSequence() != 1 {
					t.Errorf("first streamed event = %v, want the user's with sequence 1", last.events)
				}
			},
		},
		{
			name: "input blobs are saved as artifacts and replaced by a placeholder",
			turns: []*servicev1.RunRequest{{AppName: "llm", UserId: "u1", NewMessage: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{
				{Data: &agentrunnerv1.Part_Text{Text: "see attached"}},
				{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "text/plain", Data: []byte("hello"), DisplayName: "note.txt"}}},
			}}, RunConfig: &agentrunnerv1.RunConfig{SaveInputBlobsAsArtifacts: true}}},
			check: func(t *testing.T, last runResult, sess *servicev1.GetSessionResponse) {
				user := sess.GetEvents()[0]
				if p := user.GetContent().GetParts()[1]; p.GetInlineData() != nil || !strings.Contains(p.GetText(), `"note.txt"`) {
					t.Errorf("stored user part = %v, want a placeholder naming note.txt", p)
				}
				art, err := e.artifacts.LoadArtifact(t.Context(), &servicev1.LoadArtifactRequest{AppName: "llm", UserId: "u1", SessionId: sess.GetSession().GetSessionId(), Filename: "note.txt"})
				if err != nil || string(art.GetArtifact().GetInlineData().GetData()) != "hello" {
					t.Errorf("artifact note.txt = %v, %v", art, err)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app := tc.turns[0].GetAppName()
			sess := e.createSession(t, app, "u1", "")
			var last runResult
			for _, req := range tc.turns {
				req.SessionId = sess.GetSessionId()
				last = e.run(t, t.Context(), req)
				if last.status != nil {
					t.Fatalf("Run(%q) ended with %v; stream %q", req.GetNewMessage().GetParts()[0].GetText(), last.status, last.kinds)
				}
			}
			got, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: app, UserId: "u1", SessionId: sess.GetSessionId()})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range last.events {
				if !ev.GetPartial() && ev.GetSequence() == 0 {
					t.Errorf("complete event without a sequence: %v", ev)
				}
			}
			tc.check(t, last, got)
		})
	}

	codeTests := []struct {
		name  string
		req   *servicev1.RunRequest
		code  codes.Code
		field string
	}{
		{"unknown app", runReq("nope", "s", "hi"), codes.NotFound, ""},
		{"missing session", runReq("llm", "never-created", "hi"), codes.NotFound, ""},
		{"empty message", &servicev1.RunRequest{AppName: "llm", UserId: "u1", SessionId: "s", NewMessage: &agentrunnerv1.Content{}}, codes.InvalidArgument, "new_message.parts"},
	}
	for _, tc := range codeTests {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, e.run(t, t.Context(), tc.req).status, tc.code, tc.field)
		})
	}
}

// TestRunWithRunnerCancelAndConcurrency: a client that cancels stops the
// agent, what was acknowledged stays stored, and a second run on a busy
// session is rejected with Aborted while other sessions run.
func TestRunWithRunnerCancelAndConcurrency(t *testing.T) {
	testCtx := t.Context()
	entered := make(chan string, 4)
	stopped := make(chan error, 4)
	blocker := customApp("blocker", func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			if !yield(say("working on it"), nil) {
				return
			}
			entered <- ctx.SessionID()
			select {
			case <-ctx.Done(): // a model call that ends only when cancelled
			case <-testCtx.Done(): // backstop: fail instead of hanging
			}
			stopped <- ctx.Err()
			yield(nil, ctx.Err())
		}
	})
	e := newEnv(t, withRunnerApps(t, blocker))
	e.createSession(t, "blocker", "u1", "busy")
	e.createSession(t, "blocker", "u1", "other")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := e.runner.Run(ctx, runReq("blocker", "busy", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := nextEvent(stream)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, entered, "busy")

	// A second run on the busy session is rejected up front and names the
	// run in progress.
	res := e.run(t, t.Context(), runReq("blocker", "busy", "me too"))
	wantCode(t, res.status, codes.Aborted, "")
	if msg := statusMessage(res.status); !strings.Contains(msg, first.GetInvocationId()) {
		t.Errorf("Aborted message %q does not name run %s", msg, first.GetInvocationId())
	}
	// Another session is not blocked.
	otherCtx, cancelOther := context.WithCancel(t.Context())
	defer cancelOther()
	other, err := e.runner.Run(otherCtx, runReq("blocker", "other", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nextEvent(other); err != nil {
		t.Fatalf("run on another session: %v", err)
	}
	waitFor(t, entered, "other")

	cancel()
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("agent stopped with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent was not cancelled within 10s of the client cancelling")
	}
	cancelOther()
	<-stopped

	// The acknowledged event is stored, and the session takes a new run
	// once the cancelled one has released it.
	got, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "blocker", UserId: "u1", SessionId: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(got.GetEvents(), func(ev *agentrunnerv1.Event) bool { return ev.GetId() == first.GetId() }) {
		t.Errorf("acknowledged event %s is not stored", first.GetId())
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rctx, rcancel := context.WithCancel(t.Context())
		s, err := e.runner.Run(rctx, runReq("blocker", "busy", "again"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = nextEvent(s)
		if err == nil {
			waitFor(t, entered, "busy")
			rcancel()
			<-stopped
			break
		}
		rcancel()
		if time.Now().After(deadline) {
			t.Fatalf("session still busy 10s after the cancelled run: %v", err)
		}
		time.Sleep(5 * time.Millisecond) // the cancelled handler is unwinding
	}
}

func waitFor(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("agent entered for session %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("agent for session %q did not start within 10s", want)
	}
}

// callbackApp's agent is blocked by its before callback when the message
// says "stop", and followed by its after callback's event otherwise.
func callbackApp(t *testing.T) apps.App {
	root := must[agent.Agent](t)(agent.New(agent.Config{
		Name: "cb_agent",
		BeforeAgentCallbacks: []agent.BeforeAgentCallback{func(ctx agent.CallbackContext) (*agentrunnerv1.Content, error) {
			if strings.Contains(ctx.UserContent().GetParts()[0].GetText(), "stop") {
				return say("blocked by the before callback").GetContent(), nil
			}
			return nil, nil
		}},
		Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
			return func(yield func(*agentrunnerv1.Event, error) bool) { yield(say("body"), nil) }
		},
		AfterAgentCallbacks: []agent.AfterAgentCallback{func(ctx agent.CallbackContext) (*agentrunnerv1.Content, error) {
			if err := ctx.State().Set("after_ran", true); err != nil {
				return nil, err
			}
			return say("appended by the after callback").GetContent(), nil
		}},
	}))
	return apps.App{Name: "cb", Root: root}
}

// loopApp loops a child that never escalates, three times at most.
func loopApp(t *testing.T) apps.App {
	spin := must[agent.Agent](t)(agent.New(agent.Config{Name: "spin", Run: func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) { yield(say("again"), nil) }
	}}))
	root := must[agent.Agent](t)(workflow.NewLoop(workflow.LoopConfig{Name: "spinner", SubAgents: []agent.Agent{spin}, MaxIterations: 3}))
	return apps.App{Name: "loop", Root: root}
}

// approvalApp's root hands over to asker, which calls a long-running tool
// (a manager's approval) and answers once the client sends the response.
func approvalApp(t *testing.T) apps.App {
	asker := must[agent.Agent](t)(agent.New(agent.Config{Name: "asker", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			for _, p := range ctx.UserContent().GetParts() {
				if fr := p.GetFunctionResponse(); fr != nil {
					yield(say(fr.GetName()+" answered"), nil)
					return
				}
			}
			yield(&agentrunnerv1.Event{
				Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{
					FunctionCall: &agentrunnerv1.FunctionCall{Id: "approval-1", Name: "ask_manager"}}}}},
				LongRunningToolIds: []string{"approval-1"},
			}, nil)
		}
	}}))
	root := must[agent.Agent](t)(agent.New(agent.Config{Name: "front", SubAgents: []agent.Agent{asker},
		Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
			return func(yield func(*agentrunnerv1.Event, error) bool) {
				ev := say("front desk: handing over")
				ev.Actions = &agentrunnerv1.EventActions{TransferToAgent: "asker"}
				yield(ev, nil)
			}
		}}))
	return apps.App{Name: "approval", Root: root}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
