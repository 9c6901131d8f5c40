package server

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"
)

// memoryModel records its requests. Offered load_memory, it calls it
// once with the query "locker code" and answers "ok" after the response;
// otherwise it answers "ok".
type memoryModel struct {
	mu       sync.Mutex
	requests []*model.Request
}

func (m *memoryModel) Name() string { return "recorder" }

func (m *memoryModel) Generate(_ context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		m.mu.Lock()
		m.requests = append(m.requests, req)
		m.mu.Unlock()
		offered := slices.ContainsFunc(req.Tools, func(d *model.FunctionDeclaration) bool { return d.Name == "load_memory" })
		last := req.Contents[len(req.Contents)-1]
		if offered && last.GetRole() == "user" && last.GetParts()[0].GetFunctionResponse() == nil {
			args, _ := structpb.NewStruct(map[string]any{"query": "locker code"})
			call := &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{
				FunctionCall: &agentrunnerv1.FunctionCall{Name: "load_memory", Args: args}}}}}
			yield(&model.Response{Content: call, TurnComplete: true}, nil)
			return
		}
		yield(&model.Response{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "ok"}}}}, TurnComplete: true}, nil)
	}
}

func (m *memoryModel) all() []*model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.requests)
}

// memoryApps builds the apps of yaml, every model being m.
func memoryApps(m model.Model, yaml string) func(t *testing.T) []apps.App {
	return func(t *testing.T) []apps.App {
		cfg, err := apps.Parse("apps.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		built, err := apps.Build(t.Context(), cfg, func(context.Context, string) (model.Model, error) { return m, nil })
		if err != nil {
			t.Fatal(err)
		}
		return built
	}
}

// withMemoryApps serves the apps of yaml on the real runner.
func withMemoryApps(t *testing.T, m model.Model, yaml string) envOption {
	built := memoryApps(m, yaml)(t)
	var fns []func(*testing.T) apps.App
	for _, a := range built {
		fns = append(fns, func(*testing.T) apps.App { return a })
	}
	return withRunnerApps(t, fns...)
}

const memoryAppsYAML = `
apps:
  - name: notes
    memory: { add_sessions: true }
    root_agent: { name: scribe, llm: { model: recorder } }
  - name: other
    memory: { add_sessions: true }
    root_agent: { name: scribe, llm: { model: recorder } }
  - name: recall
    memory: { add_sessions: true }
    root_agent: { name: recaller, llm: { model: recorder, tools: [load_memory] } }
  - name: preload
    memory: { add_sessions: true }
    root_agent: { name: preloader, llm: { model: recorder, tools: [preload_memory] } }
`

// runAs runs one turn of user in app/session, which is created first.
func (e *env) runAs(t *testing.T, app, user, session, msg string) {
	t.Helper()
	e.createSession(t, app, user, session)
	req := &servicev1.RunRequest{AppName: app, UserId: user, SessionId: session, NewMessage: text(msg)}
	if res := e.run(t, t.Context(), req); res.status != nil || len(res.errors) > 0 {
		t.Fatalf("run %s/%s/%s: %v %v", app, user, session, res.status, res.errors)
	}
}

func memoryLines(resp *servicev1.SearchMemoryResponse) []string {
	var out []string
	for _, m := range resp.GetMemories() {
		var sb strings.Builder
		for _, p := range m.GetContent().GetParts() {
			sb.WriteString(p.GetText())
		}
		out = append(out, fmt.Sprintf("%s#%d %s: %s", m.GetSessionId(), m.GetEventSequence(), m.GetAuthor(), sb.String()))
	}
	return out
}

// TestSearchMemory: with add_sessions, a fact told in one session is
// found by the user's search, and nothing of another user's or another
// app's sessions is.
func TestSearchMemory(t *testing.T) {
	e := newEnv(t, withMemoryApps(t, &memoryModel{}, memoryAppsYAML))
	mem := servicev1.NewMemoryServiceClient(e.conn)
	e.runAs(t, "notes", "u1", "s1", "My locker code is 4711")
	e.runAs(t, "notes", "u2", "s1", "My locker code is 9999")
	e.runAs(t, "other", "u1", "s1", "My locker code is 1234")

	resp, err := mem.SearchMemory(t.Context(), &servicev1.SearchMemoryRequest{AppName: "notes", UserId: "u1", Query: "what is the locker code?"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := memoryLines(resp), []string{"s1#1 user: My locker code is 4711"}; !slices.Equal(got, want) {
		t.Fatalf("memories %q, want %q", got, want)
	}
	m := resp.GetMemories()[0]
	if m.GetTime() == nil || m.GetTime().AsTime().IsZero() || resp.GetNextPageToken() != "" {
		t.Errorf("memory time %v, next page %q", m.GetTime(), resp.GetNextPageToken())
	}
	// The model's answers are in memory too.
	resp, err = mem.SearchMemory(t.Context(), &servicev1.SearchMemoryRequest{AppName: "notes", UserId: "u2", Query: "OK", PageSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := memoryLines(resp), []string{"s1#2 scribe: ok"}; !slices.Equal(got, want) {
		t.Fatalf("u2's memories %q, want %q", got, want)
	}
}

// TestMemoryValidation: bad requests are InvalidArgument naming the
// field; adding a missing session is NotFound.
func TestMemoryValidation(t *testing.T) {
	e := newEnv(t)
	mem := servicev1.NewMemoryServiceClient(e.conn)
	for _, tc := range []struct {
		req   *servicev1.SearchMemoryRequest
		field string
	}{
		{&servicev1.SearchMemoryRequest{UserId: "u", Query: "x"}, "app_name"},
		{&servicev1.SearchMemoryRequest{AppName: "a", UserId: "u\n", Query: "x"}, "user_id"},
		{&servicev1.SearchMemoryRequest{AppName: "a", UserId: "u"}, "query"},
		{&servicev1.SearchMemoryRequest{AppName: "a", UserId: "u", Query: strings.Repeat("x", maxMemoryQueryBytes+1)}, "query"},
		{&servicev1.SearchMemoryRequest{AppName: "a", UserId: "u", Query: "x", PageSize: -1}, "page_size"},
	} {
		_, err := mem.SearchMemory(t.Context(), tc.req)
		wantCode(t, err, codes.InvalidArgument, tc.field)
	}
	_, err := mem.SearchMemory(t.Context(), &servicev1.SearchMemoryRequest{AppName: "a", UserId: "u", Query: "x", PageToken: "garbage!"})
	wantCode(t, err, codes.InvalidArgument, "")
	_, err = mem.AddSessionToMemory(t.Context(), &servicev1.AddSessionToMemoryRequest{AppName: "a", UserId: "u"})
	wantCode(t, err, codes.InvalidArgument, "session_id")
	_, err = mem.AddSessionToMemory(t.Context(), &servicev1.AddSessionToMemoryRequest{AppName: "a", UserId: "u", SessionId: "missing"})
	wantCode(t, err, codes.NotFound, "")
}

// TestAddSessionToMemory: a session of an app without add_sessions is in
// memory once added, its later events too, and out of it once deleted.
func TestAddSessionToMemory(t *testing.T) {
	e := newEnv(t)
	mem := servicev1.NewMemoryServiceClient(e.conn)
	e.createSession(t, "plain", "u1", "s1")
	appendText := func(msg string) {
		t.Helper()
		ev := &agentrunnerv1.Event{Author: "user", Content: text(msg)}
		if _, err := e.sessions.AppendEvent(t.Context(), &servicev1.AppendEventRequest{AppName: "plain", UserId: "u1", SessionId: "s1", Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
	search := func(q string) []string {
		t.Helper()
		resp, err := mem.SearchMemory(t.Context(), &servicev1.SearchMemoryRequest{AppName: "plain", UserId: "u1", Query: q})
		if err != nil {
			t.Fatal(err)
		}
		return memoryLines(resp)
	}
	appendText("the zebra crossing")
	if got := search("zebra"); len(got) != 0 {
		t.Fatalf("found %q before the session was added", got)
	}
	add := &servicev1.AddSessionToMemoryRequest{AppName: "plain", UserId: "u1", SessionId: "s1"}
	for range 2 { // adding again changes nothing
		if _, err := mem.AddSessionToMemory(t.Context(), add); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := search("zebra"), []string{"s1#1 user: the zebra crossing"}; !slices.Equal(got, want) {
		t.Fatalf("after add: %q, want %q", got, want)
	}
	appendText("a zebra again")
	if got, want := search("zebra"), []string{"s1#2 user: a zebra again", "s1#1 user: the zebra crossing"}; !slices.Equal(got, want) {
		t.Fatalf("after append: %q, want %q", got, want)
	}
	if _, err := e.sessions.DeleteSession(t.Context(), &servicev1.DeleteSessionRequest{AppName: "plain", UserId: "u1", SessionId: "s1"}); err != nil {
		t.Fatal(err)
	}
	if got := search("zebra"); len(got) != 0 {
		t.Fatalf("found %q after the session was deleted", got)
	}
}

// TestLoadMemoryTool: the model calls load_memory and gets the fact of
// the user's other session, and nothing of the current one.
func TestLoadMemoryTool(t *testing.T) {
	m := &memoryModel{}
	e := newEnv(t, withMemoryApps(t, m, memoryAppsYAML))
	e.runAs(t, "recall", "u1", "old", "Remember: my locker code is 4711")
	e.runAs(t, "recall", "u2", "theirs", "My locker code is 9999")
	before := len(m.all())
	e.runAs(t, "recall", "u1", "new", "What is my locker code?")
	reqs := m.all()[before:]
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want the call and the answer", len(reqs))
	}
	last := reqs[1].Contents[len(reqs[1].Contents)-1]
	fr := last.GetParts()[0].GetFunctionResponse()
	if fr.GetName() != "load_memory" {
		t.Fatalf("last content %v, want load_memory's response", last)
	}
	var texts []string
	for _, v := range fr.GetResponse().GetFields()["memories"].GetListValue().GetValues() {
		f := v.GetStructValue().GetFields()
		texts = append(texts, f["session_id"].GetStringValue()+": "+f["text"].GetStringValue())
	}
	// The old session's call and answer hold no "locker"; its question
	// does. The current session is left out, u2's is never seen.
	if want := []string{"old: Remember: my locker code is 4711"}; !slices.Equal(texts, want) {
		t.Fatalf("memories %q, want %q", texts, want)
	}
}

// TestPreloadMemory: the model's request carries the memories the user's
// message finds, and no preload_memory declaration.
func TestPreloadMemory(t *testing.T) {
	m := &memoryModel{}
	e := newEnv(t, withMemoryApps(t, m, memoryAppsYAML))
	e.runAs(t, "preload", "u1", "old", "My locker code is 4711")
	if reqs := m.all(); strings.Contains(reqs[0].SystemInstruction, "PAST_CONVERSATIONS") {
		t.Fatalf("the first session's request carries memories: %q", reqs[0].SystemInstruction)
	}
	e.runAs(t, "preload", "u1", "new", "Which locker code did I give you?")
	reqs := m.all()
	req := reqs[len(reqs)-1]
	if !strings.Contains(req.SystemInstruction, "<PAST_CONVERSATIONS>") || !strings.Contains(req.SystemInstruction, "user: My locker code is 4711") {
		t.Fatalf("instruction %q lacks the memory", req.SystemInstruction)
	}
	if strings.Contains(req.SystemInstruction, "Which locker") {
		t.Fatalf("instruction %q carries the current session", req.SystemInstruction)
	}
	for _, d := range req.Tools {
		if d.Name == "preload_memory" {
			t.Fatal("preload_memory was declared to the model")
		}
	}
}

// maxMemoryQueryBytes is the front desk's bound on a memory query.
const maxMemoryQueryBytes = 4096
