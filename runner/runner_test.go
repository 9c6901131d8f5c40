package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestRunRejects(t *testing.T) {
	tests := []struct {
		name string
		req  func(k store.SessionKey) Request
		want error
	}{
		{name: "missing session", req: func(k store.SessionKey) Request {
			return request(store.SessionKey{User: k.User, Session: "nope"}, "hi")
		}, want: store.ErrNotFound},
		{name: "other user's session", req: func(k store.SessionKey) Request {
			return request(store.SessionKey{User: "u2", Session: k.Session}, "hi")
		}, want: store.ErrNotFound},
		{name: "empty user", req: func(k store.SessionKey) Request { return request(store.SessionKey{Session: k.Session}, "hi") }, want: store.ErrInvalidArgument},
		{name: "no message", req: func(k store.SessionKey) Request { return Request{UserID: k.User, SessionID: k.Session} }, want: store.ErrInvalidArgument},
		{
			name: "empty part",
			req: func(k store.SessionKey) Request {
				return Request{UserID: k.User, SessionID: k.Session, NewMessage: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{}}}}
			},
			want: store.ErrInvalidArgument,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, db, k := newTestRunner(t, mustAgent(t, "root", "hello"))
			res := collect(t, r.Run(t.Context(), tc.req(k)))
			if !errors.Is(res.err, tc.want) || len(res.events) != 0 {
				t.Fatalf("got events %v, err %v; want only an error wrapping %v", summary(res.events), res.err, tc.want)
			}
			_, events, err := db.GetSession(t.Context(), k, store.GetOptions{})
			if err != nil || len(events) != 0 {
				t.Fatalf("session has %d events (err %v), want none", len(events), err)
			}
		})
	}
}

func TestUserEvent(t *testing.T) {
	png := []byte("\x89PNG fake")
	blobMsg := &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{
		textPart("look at these"),
		{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "image/png", Data: png, DisplayName: "cat.png"}}},
		{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "text/csv", Data: []byte("a,b")}}},
	}}
	tests := []struct {
		name      string
		cfg       *agentrunnerv1.RunConfig
		wantFirst string // author of the first yielded event
		wantBlobs bool   // whether blobs are replaced by placeholders
	}{
		{name: "defaults", cfg: nil, wantFirst: "root"},
		{name: "stream user event", cfg: &agentrunnerv1.RunConfig{StreamUserEvent: true}, wantFirst: "user"},
		{name: "save blobs", cfg: &agentrunnerv1.RunConfig{SaveInputBlobsAsArtifacts: true}, wantFirst: "root", wantBlobs: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var seen *agentrunnerv1.Content
			root := mustCustom(t, agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
				seen = ctx.UserContent()
				return sayAll("got it")(ctx)
			}})
			r, db, k := newTestRunner(t, root)
			req := Request{UserID: k.User, SessionID: k.Session, NewMessage: blobMsg, Config: tc.cfg}
			res := mustRun(t, r, req)
			if got := res.events[0].GetAuthor(); got != tc.wantFirst {
				t.Fatalf("first event by %s, want %s", got, tc.wantFirst)
			}
			if blobMsg.Role != "" || len(blobMsg.Parts) != 3 || blobMsg.Parts[1].GetInlineData() == nil {
				t.Fatal("the request's message was modified")
			}
			_, events, err := db.GetSession(t.Context(), k, store.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			user := events[0]
			if user.GetAuthor() != "user" || user.GetContent().GetRole() != "user" || user.GetSequence() != 1 {
				t.Fatalf("first stored event %v, want the user's with role user and sequence 1", user)
			}
			if !proto.Equal(seen, user.GetContent()) {
				t.Errorf("agent saw user content %v, want the stored one %v", seen, user.GetContent())
			}
			if !tc.wantBlobs {
				if !proto.Equal(user.GetContent().GetParts()[1], blobMsg.Parts[1]) {
					t.Fatalf("blob not kept inline: %v", user.GetContent())
				}
				return
			}
			parts := user.GetContent().GetParts()
			for i, want := range map[int]string{1: "cat.png", 2: "upload_"} {
				text := parts[i].GetText()
				if !strings.Contains(text, want) || !strings.Contains(text, "version 1") {
					t.Errorf("part %d = %q, want a placeholder naming %s version 1", i, text, want)
				}
			}
			delta := user.GetActions().GetArtifactDelta()
			if delta["cat.png"] != 1 || len(delta) != 2 {
				t.Fatalf("artifact delta %v, want cat.png and the unnamed upload at version 1", delta)
			}
			part, _, err := db.LoadArtifact(t.Context(), k, "cat.png", 1)
			if err != nil || string(part.GetInlineData().GetData()) != string(png) {
				t.Fatalf("artifact cat.png = %v, %v; want the uploaded bytes", part, err)
			}
		})
	}
}

func TestPartialEventsYieldedNotStored(t *testing.T) {
	m := &fakeModel{name: "fake", respond: func(*model.Request, int) ([]*model.Response, error) {
		return []*model.Response{
			{Content: modelText("Hel"), Partial: true},
			{Content: modelText("lo"), Partial: true},
			{Content: modelText("Hello"), TurnComplete: true},
		}, nil
	}}
	tests := []struct {
		name string
		mode agentrunnerv1.StreamingMode
		want []string
	}{
		{name: "sse", mode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE, want: []string{"root: Hel (partial)", "root: lo (partial)", "root: Hello"}},
		{name: "none", mode: agentrunnerv1.StreamingMode_STREAMING_MODE_NONE, want: []string{"root: Hello"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, db, k := newTestRunner(t, llm(t, llmagent.Config{Name: "root", Model: m}))
			req := request(k, "hi")
			req.Config = &agentrunnerv1.RunConfig{StreamingMode: tc.mode}
			res := mustRun(t, r, req)
			if got := summary(res.events); !equalStrings(got, tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
			for _, ev := range res.events {
				if ev.GetPartial() != (ev.GetSequence() == 0) {
					t.Errorf("event %q: partial %v with sequence %d", textOf(ev.Content), ev.Partial, ev.Sequence)
				}
				if ev.GetInvocationId() == "" || ev.GetId() == "" {
					t.Errorf("event %q lacks invocation id or id", textOf(ev.Content))
				}
			}
			_, events, err := db.GetSession(t.Context(), k, store.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := summary(events), []string{"user: hi", "root: Hello"}; !equalStrings(got, want) {
				t.Fatalf("stored %q, want %q", got, want)
			}
		})
	}
}

// stateReader records what an agent reads from state, in order.
type stateReader struct{ during []string }

func (s *stateReader) read(ctx agent.InvocationContext, keys ...string) {
	for _, k := range keys {
		v, ok := ctx.State().Get(k)
		s.during = append(s.during, fmt.Sprintf("%s=%v", k, map[bool]any{true: v.AsInterface(), false: "-"}[ok]))
	}
}

// stateDeltaAgent changes state every way an agent can: in a before
// callback (with a temp: key), in an event's delta, through State().Set
// (including a deletion and a change after its last event), and in an
// after callback; it records what it reads in between.
func stateDeltaAgent(t *testing.T, read func(agent.InvocationContext, ...string)) agent.Agent {
	return mustCustom(t, agent.Config{
		Name: "root",
		BeforeAgentCallbacks: []agent.BeforeAgentCallback{func(cc agent.CallbackContext) (*agentrunnerv1.Content, error) {
			if err := cc.State().Set("before", "yes"); err != nil {
				return nil, err
			}
			return nil, cc.State().Set("temp:scratch", 1)
		}},
		Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
			return func(yield func(*agentrunnerv1.Event, error) bool) {
				read(ctx, "req", "temp:req", "before", "temp:scratch")
				ev := say("step 1")
				ev.Actions = &agentrunnerv1.EventActions{StateDelta: mustStruct(t, map[string]any{"event": 1, "user:pref": "dark", "temp:ev": true})}
				if !yield(ev, nil) {
					return
				}
				read(ctx, "event", "temp:ev")
				if err := ctx.State().Set("run", "set"); err != nil {
					yield(nil, err)
					return
				}
				read(ctx, "run")
				if err := ctx.State().Set("req", nil); err != nil { // a deletion
					yield(nil, err)
					return
				}
				yield(say("step 2"), nil)
				_ = ctx.State().Set("late", true) // lands in a state-only event
			}
		},
		AfterAgentCallbacks: []agent.AfterAgentCallback{func(cc agent.CallbackContext) (*agentrunnerv1.Content, error) {
			v, _ := cc.State().Get("late")
			return nil, cc.State().Set("after", v.GetBoolValue())
		}},
	})
}

func TestStateDeltas(t *testing.T) {
	var sr stateReader
	read := sr.read
	root := stateDeltaAgent(t, read)
	r, db, k := newTestRunner(t, root)
	req := request(k, "hi")
	req.StateDelta = mustStruct(t, map[string]any{"req": "r", "temp:req": "t"})
	res := mustRun(t, r, req)

	wantRead := []string{"req=r", "temp:req=t", "before=yes", "temp:scratch=1", "event=1", "temp:ev=true", "run=set"}
	if !equalStrings(sr.during, wantRead) {
		t.Errorf("agent read %q, want %q", sr.during, wantRead)
	}
	if got, want := len(res.events), 5; got != want { // before, step 1, step 2, late, after
		t.Fatalf("%d events %q, want %d", got, summary(res.events), want)
	}
	if d := res.events[2].GetActions().GetStateDelta().GetFields(); d["run"].GetStringValue() != "set" || !store.IsNull(d["req"]) {
		t.Errorf("step 2 delta %v, want run=set and req deleted", d)
	}
	for _, ev := range res.events {
		for key := range ev.GetActions().GetStateDelta().GetFields() {
			if strings.HasPrefix(key, store.TempPrefix) {
				t.Errorf("yielded event %d carries %s", ev.Sequence, key)
			}
		}
	}
	sess, events, err := db.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"before": "yes", "event": 1.0, "user:pref": "dark", "run": "set", "late": true, "after": true}
	if got := sess.GetState().AsMap(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stored state %v, want %v", got, want)
	}
	for _, ev := range events {
		for key := range ev.GetActions().GetStateDelta().GetFields() {
			if strings.HasPrefix(key, store.TempPrefix) {
				t.Errorf("stored event %d carries %s", ev.Sequence, key)
			}
		}
	}

	// temp: keys are gone in the next invocation.
	sr.during = nil
	root2 := mustCustom(t, agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		read(ctx, "temp:req", "temp:ev", "user:pref")
		return sayAll("ok")(ctx)
	}})
	r2 := must[*Runner](t)(New(Config{AppName: testApp, Root: root2, Store: db}))
	mustRun(t, r2, request(k, "again"))
	if want := []string{"temp:req=-", "temp:ev=-", "user:pref=dark"}; !equalStrings(sr.during, want) {
		t.Errorf("next invocation read %q, want %q", sr.during, want)
	}
}

func mustStruct(t testing.TB, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCallbacks(t *testing.T) {
	content := func(s string) func(agent.CallbackContext) (*agentrunnerv1.Content, error) {
		return func(agent.CallbackContext) (*agentrunnerv1.Content, error) { return modelText(s), nil }
	}
	fail := func(agent.CallbackContext) (*agentrunnerv1.Content, error) { return nil, errors.New("callback failed") }
	pass := func(agent.CallbackContext) (*agentrunnerv1.Content, error) { return nil, nil }
	tests := []struct {
		name     string
		before   []agent.BeforeAgentCallback
		after    []agent.AfterAgentCallback
		want     []string
		wantErrs int
	}{
		{name: "none", want: []string{"root: ran"}},
		{name: "before passes", before: []agent.BeforeAgentCallback{pass, pass}, want: []string{"root: ran"}},
		{name: "before short-circuits", before: []agent.BeforeAgentCallback{pass, content("cached"), content("never")}, after: []agent.AfterAgentCallback{content("no after")}, want: []string{"root: cached"}},
		{name: "before fails", before: []agent.BeforeAgentCallback{fail}, want: []string{"root: "}, wantErrs: 1},
		{name: "after appends", after: []agent.AfterAgentCallback{pass, content("appended"), content("never")}, want: []string{"root: ran", "root: appended"}},
		{name: "after fails", after: []agent.AfterAgentCallback{fail}, want: []string{"root: ran", "root: "}, wantErrs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := mustCustom(t, agent.Config{Name: "root", Run: sayAll("ran"), BeforeAgentCallbacks: tc.before, AfterAgentCallbacks: tc.after})
			r, db, k := newTestRunner(t, root)
			res := mustRun(t, r, request(k, "hi"))
			if got := summary(res.events); !equalStrings(got, tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
			if len(res.agentErrs) != tc.wantErrs {
				t.Fatalf("agent errors %v, want %d", res.agentErrs, tc.wantErrs)
			}
			for _, e := range res.agentErrs {
				if e.Agent != "root" {
					t.Errorf("error attributed to %q, want root", e.Agent)
				}
			}
			_, events, _ := db.GetSession(t.Context(), k, store.GetOptions{})
			if got := summary(events[1:]); !equalStrings(got, tc.want) {
				t.Fatalf("stored %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAgentErrorMidRun(t *testing.T) {
	flaky := mustCustom(t, agent.Config{Name: "flaky", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			_ = yield(say("before the failure"), nil) &&
				yield(nil, errors.New("tool exploded")) &&
				yield(say("after the failure"), nil)
		}
	}})
	root := must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "root", SubAgents: []agent.Agent{flaky, mustAgent(t, "next", "still here")}}))
	r, db, k := newTestRunner(t, root)
	var order []string
	for ev, err := range r.Run(t.Context(), request(k, "go")) {
		var ae *agent.AgentError
		switch {
		case errors.As(err, &ae):
			order = append(order, "error from "+ae.Agent+": "+ae.Err.Error())
		case err != nil:
			t.Fatalf("terminal error %v", err)
		default:
			order = append(order, summary([]*agentrunnerv1.Event{ev})...)
		}
	}
	// The in-band failure is stored (without content) before it is
	// delivered.
	want := []string{"flaky: before the failure", "flaky: ", "error from flaky: tool exploded", "flaky: after the failure", "next: still here"}
	if !equalStrings(order, want) {
		t.Fatalf("got %q, want %q", order, want)
	}
	_, events, _ := db.GetSession(t.Context(), k, store.GetOptions{})
	if events = slices.DeleteFunc(events, isEnd); len(events) != 5 {
		t.Fatalf("stored %q, want the user event, three agent events and the failure", summary(events))
	}
}

func TestCancellationStopsAgent(t *testing.T) {
	started := make(chan struct{})
	stopped := make(chan struct{})
	blocker := mustCustom(t, agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			if ctx.UserContent().GetParts()[0].GetText() != "go" {
				return
			}
			defer close(stopped)
			if !yield(say("first"), nil) {
				return
			}
			close(started)
			<-ctx.Done() // a model call in flight
			yield(nil, ctx.Err())
		}
	}})
	r, db, k := newTestRunner(t, blocker)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan result)
	go func() { done <- collect(t, r.Run(ctx, request(k, "go"))) }()
	waitClosed(t, started, "the agent to start")
	cancel()
	waitClosed(t, stopped, "the agent to stop")
	var res result
	select {
	case res = <-done:
	case <-t.Context().Done():
	}
	if !errors.Is(res.err, context.Canceled) || len(res.agentErrs) != 0 {
		t.Fatalf("run ended with %v (agent errors %v), want context.Canceled", res.err, res.agentErrs)
	}
	if got := summary(res.events); !equalStrings(got, []string{"root: first"}) {
		t.Fatalf("events %q", got)
	}
	_, events, _ := db.GetSession(t.Context(), k, store.GetOptions{})
	if got := summary(events); !equalStrings(got, []string{"user: go", "root: first", "root: "}) {
		t.Fatalf("stored %q: the acknowledged event must stay, then the one that says the run was cancelled", got)
	}
	if last := events[len(events)-1]; last.GetErrorCode() != "CANCELLED" || last.GetInvocationId() != events[0].GetInvocationId() {
		t.Errorf("last stored event %v, want the run's CANCELLED event", last)
	}
	// The session is free again.
	res = collect(t, r.Run(t.Context(), request(k, "again")))
	if errors.Is(res.err, ErrRunInProgress) {
		t.Fatal("the cancelled run still holds the session")
	}
}

func TestEarlyBreakReleasesSession(t *testing.T) {
	r, _, k := newTestRunner(t, mustAgent(t, "root", "one", "two", "three"))
	for range r.Run(t.Context(), request(k, "hi")) {
		break
	}
	res := mustRun(t, r, request(k, "again"))
	if len(res.events) != 3 {
		t.Fatalf("second run yielded %q", summary(res.events))
	}
}

func TestOneRunPerSession(t *testing.T) {
	entered := make(chan struct{}, 2)
	release := make(chan struct{})
	root := mustCustom(t, agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			if !yield(say("start "+ctx.SessionID()), nil) {
				return
			}
			entered <- struct{}{}
			<-release
			yield(say("end "+ctx.SessionID()), nil)
		}
	}})
	r, db, k := newTestRunner(t, root)
	other := newSession(t, db, k.User, "s2")

	var wg sync.WaitGroup
	results := make([]result, 2)
	for i, key := range []store.SessionKey{k, other} {
		wg.Go(func() { results[i] = collect(t, r.Run(t.Context(), request(key, "first"))) })
	}
	// Both sessions are running at once: different sessions do not wait
	// for each other.
	<-entered
	<-entered

	var invocation string
	res := collect(t, r.Run(t.Context(), request(k, "second")))
	if !errors.Is(res.err, ErrRunInProgress) || len(res.events) != 0 {
		t.Fatalf("concurrent run: %v, events %q; want ErrRunInProgress", res.err, summary(res.events))
	}
	close(release)
	wg.Wait()
	for i, res := range results {
		if res.err != nil || len(res.events) != 2 {
			t.Fatalf("run %d: %q, %v", i, summary(res.events), res.err)
		}
		if i == 0 {
			invocation = res.events[0].GetInvocationId()
		}
	}
	// Once the first run is over, the session takes runs again.
	mustRun(t, r, request(k, "second"))
	_, events, _ := db.GetSession(t.Context(), k, store.GetOptions{})
	want := []string{"user: first", "root: start s1", "root: end s1", "user: second", "root: start s1", "root: end s1"}
	if got := summary(events); !equalStrings(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
	for i, ev := range events {
		if ev.GetSequence() != uint64(i+1) || (i < 3 && ev.GetInvocationId() != invocation) {
			t.Fatalf("event %d: sequence %d invocation %s, want one uninterrupted invocation %s", i, ev.GetSequence(), ev.GetInvocationId(), invocation)
		}
	}
}

func TestRunInProgressNamesInvocation(t *testing.T) {
	release := make(chan struct{})
	first := make(chan string, 1)
	root := mustCustom(t, agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			first <- ctx.InvocationID()
			<-release
		}
	}})
	r, _, k := newTestRunner(t, root)
	done := make(chan struct{})
	go func() {
		defer close(done)
		collect(t, r.Run(t.Context(), request(k, "first")))
	}()
	id := <-first
	res := collect(t, r.Run(t.Context(), request(k, "second")))
	close(release)
	<-done
	if !errors.Is(res.err, ErrRunInProgress) || !strings.Contains(res.err.Error(), id) {
		t.Fatalf("got %v, want ErrRunInProgress naming %s", res.err, id)
	}
}

func TestMaxLLMCalls(t *testing.T) {
	tests := []struct {
		name      string
		max       int32
		wantCalls int
		wantErr   bool
	}{
		{name: "limit reached", max: 3, wantCalls: 3, wantErr: true},
		{name: "limit not reached", max: 10, wantCalls: 5},
		{name: "unlimited", max: -1, wantCalls: 5},
		{name: "default", max: 0, wantCalls: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &fakeModel{name: "fake", reply: "again"}
			loop := must[agent.Agent](t)(workflow.NewLoop(workflow.LoopConfig{Name: "root", MaxIterations: 5, SubAgents: []agent.Agent{llm(t, llmagent.Config{Name: "chatty", Model: m})}}))
			r, _, k := newTestRunner(t, loop)
			req := request(k, "go")
			req.Config = &agentrunnerv1.RunConfig{MaxLlmCalls: tc.max}
			res := collect(t, r.Run(t.Context(), req))
			if got := len(res.events); got != tc.wantCalls {
				t.Errorf("%d events, want %d", got, tc.wantCalls)
			}
			if got := errors.Is(res.err, agent.ErrMaxLLMCalls); got != tc.wantErr {
				t.Fatalf("terminal error %v, want ErrMaxLLMCalls: %v", res.err, tc.wantErr)
			}
			if len(m.calls()) != tc.wantCalls {
				t.Fatalf("%d model calls, want %d", len(m.calls()), tc.wantCalls)
			}
		})
	}
}

func TestArtifactsFromAgent(t *testing.T) {
	root := mustCustom(t, agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			for _, name := range []string{"report.txt", "report.txt", "user:notes"} {
				if _, err := ctx.Artifacts().Save(ctx, name, textPart("v")); err != nil {
					yield(nil, err)
					return
				}
			}
			list, err := ctx.Artifacts().List(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			p, err := ctx.Artifacts().Load(ctx, "report.txt", 0)
			if err != nil {
				yield(nil, err)
				return
			}
			yield(say(fmt.Sprintf("%d artifacts, latest %s", len(list), p.GetText())), nil)
		}
	}})
	r, _, k := newTestRunner(t, root)
	res := mustRun(t, r, request(k, "save"))
	if len(res.events) != 1 || len(res.agentErrs) != 0 {
		t.Fatalf("events %q, errors %v", summary(res.events), res.agentErrs)
	}
	ev := res.events[0]
	if textOf(ev.Content) != "2 artifacts, latest v" {
		t.Errorf("agent said %q", textOf(ev.Content))
	}
	if d := ev.GetActions().GetArtifactDelta(); d["report.txt"] != 2 || d["user:notes"] != 1 {
		t.Errorf("artifact delta %v, want report.txt:2 user:notes:1", d)
	}
}

func TestEndInvocation(t *testing.T) {
	ender := mustCustom(t, agent.Config{Name: "ender", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			ctx.EndInvocation()
			yield(say("that's all"), nil)
		}
	}, AfterAgentCallbacks: []agent.AfterAgentCallback{func(agent.CallbackContext) (*agentrunnerv1.Content, error) {
		return modelText("after callbacks skipped too"), nil
	}}})
	root := must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "root", SubAgents: []agent.Agent{mustAgent(t, "a", "a"), ender, mustAgent(t, "b", "b")}}))
	r, _, k := newTestRunner(t, root)
	res := mustRun(t, r, request(k, "go"))
	if got, want := summary(res.events), []string{"a: a", "ender: that's all"}; !equalStrings(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestRunnerStoreFailure(t *testing.T) {
	r, db, k := newTestRunner(t, mustAgent(t, "root", "one", "two"))
	fs := &failingStore{Store: db, failAfter: 2} // the user event and "one"
	r.store, r.config().env.Store = fs, fs
	res := collect(t, r.Run(t.Context(), request(k, "hi")))
	if res.err == nil || !strings.Contains(res.err.Error(), "disk full") {
		t.Fatalf("got %v, want the append failure", res.err)
	}
	if got := summary(res.events); !equalStrings(got, []string{"root: one"}) {
		t.Fatalf("events %q; nothing unpersisted may be yielded", got)
	}
}

type failingStore struct {
	Store
	mu        sync.Mutex
	failAfter int
}

func (f *failingStore) fail() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failAfter--
	if f.failAfter < 0 {
		return errors.New("disk full")
	}
	return nil
}

func (f *failingStore) AppendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.Store.AppendEvent(ctx, k, ev)
}

func (f *failingStore) AppendRunEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event, run *agentrunnerv1.Run) (*agentrunnerv1.Event, *agentrunnerv1.Run, error) {
	if err := f.fail(); err != nil {
		return nil, nil, err
	}
	return f.Store.AppendRunEvent(ctx, k, ev, run)
}

func TestAuthorsAndBranchFilledIn(t *testing.T) {
	root := mustCustom(t, agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			_ = yield(&agentrunnerv1.Event{Content: modelText("mine")}, nil) &&
				yield(&agentrunnerv1.Event{Content: userText("relayed user input")}, nil) &&
				yield(&agentrunnerv1.Event{Author: "someone", Content: modelText("kept")}, nil) &&
				yield(&agentrunnerv1.Event{Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{textPart("no role")}}}, nil)
		}
	}})
	r, _, k := newTestRunner(t, root)
	res := mustRun(t, r, request(k, "hi"))
	want := []string{"root: mine", "user: relayed user input", "someone: kept", "root: no role"}
	if got := summary(res.events); !equalStrings(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for _, ev := range res.events {
		if ev.GetInvocationId() != res.events[0].GetInvocationId() || !strings.HasPrefix(ev.GetInvocationId(), "e-") || ev.GetTimestamp() == nil {
			t.Errorf("event %q: invocation %q timestamp %v", textOf(ev.Content), ev.GetInvocationId(), ev.GetTimestamp())
		}
	}
}

func TestSeams(t *testing.T) {
	db := newTestStore(t)
	k := newSession(t, db, "u1", "s1")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	n := 0
	r := must[*Runner](t)(New(Config{
		AppName: testApp, Root: mustAgent(t, "root", "hello"), Store: db,
		Now:   func() time.Time { return now },
		NewID: func() string { n++; return fmt.Sprint("id", n) },
	}))
	req := request(k, "hi")
	req.Config = &agentrunnerv1.RunConfig{StreamUserEvent: true}
	res := mustRun(t, r, req)
	var got []string
	for _, ev := range res.events {
		got = append(got, ev.GetInvocationId()+" "+ev.GetId()+" "+ev.GetTimestamp().AsTime().Format(time.RFC3339))
	}
	want := []string{"e-id1 id2 2030-01-02T03:04:05Z", "e-id1 id3 2030-01-02T03:04:05Z"}
	if !equalStrings(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
