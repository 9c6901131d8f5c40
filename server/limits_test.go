package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/apps"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

func withLimits(l Limits) envOption { return func(c *Config) { c.Limits = l } }

// TestPageSizeLimit: every listing refuses a page_size above the limit,
// with InvalidArgument naming the field, and takes one at it.
func TestPageSizeLimit(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)), withLimits(Limits{MaxPageSize: 10}))
	e.createSession(t, "echo", "u", "s")
	if _, err := e.artifacts.SaveArtifact(t.Context(), &servicev1.SaveArtifactRequest{AppName: "echo", UserId: "u", SessionId: "s", Filename: "f", Artifact: text("x").GetParts()[0]}); err != nil {
		t.Fatal(err)
	}
	lists := map[string]func(ctx context.Context, n int32) error{
		"ListSessions": func(ctx context.Context, n int32) error {
			_, err := e.sessions.ListSessions(ctx, &servicev1.ListSessionsRequest{AppName: "echo", UserId: "u", PageSize: n})
			return err
		},
		"ListEvents": func(ctx context.Context, n int32) error {
			_, err := e.sessions.ListEvents(ctx, &servicev1.ListEventsRequest{AppName: "echo", UserId: "u", SessionId: "s", PageSize: n})
			return err
		},
		"ListArtifacts": func(ctx context.Context, n int32) error {
			_, err := e.artifacts.ListArtifacts(ctx, &servicev1.ListArtifactsRequest{AppName: "echo", UserId: "u", SessionId: "s", PageSize: n})
			return err
		},
		"ListArtifactVersions": func(ctx context.Context, n int32) error {
			_, err := e.artifacts.ListArtifactVersions(ctx, &servicev1.ListArtifactVersionsRequest{AppName: "echo", UserId: "u", SessionId: "s", Filename: "f", PageSize: n})
			return err
		},
		"ListRuns": func(ctx context.Context, n int32) error {
			_, err := e.runner.ListRuns(ctx, &servicev1.ListRunsRequest{AppName: "echo", UserId: "u", SessionId: "s", PageSize: n})
			return err
		},
	}
	for name, list := range lists {
		if err := list(t.Context(), 10); err != nil {
			t.Errorf("%s with page_size 10: %v", name, err)
		}
		err := list(t.Context(), 11)
		wantCode(t, err, codes.InvalidArgument, "page_size")
		if msg := statusMessage(err); msg != "page_size: 11 is above the limit of 10" {
			t.Errorf("%s: %q", name, msg)
		}
	}
	// The default is the store's ceiling, 1000.
	d := newEnv(t)
	_, err := d.sessions.ListSessions(t.Context(), &servicev1.ListSessionsRequest{AppName: "echo", UserId: "u", PageSize: 1001})
	wantCode(t, err, codes.InvalidArgument, "page_size")
}

// TestEventsPerCallLimit: GetSession returns at most the limit, the most
// recent events, and counts the rest it selects as omitted.
func TestEventsPerCallLimit(t *testing.T) {
	e := newEnv(t, withLimits(Limits{MaxEventsPerCall: 3}))
	e.createSession(t, "a", "u", "s")
	for range 5 {
		if _, err := e.sessions.AppendEvent(t.Context(), &servicev1.AppendEventRequest{AppName: "a", UserId: "u", SessionId: "s", Event: &agentrunnerv1.Event{Author: "user", Content: text("x")}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		recent  int32
		after   uint64
		first   uint64
		n       int
		omitted uint64
	}{
		{0, 0, 3, 3, 2},
		{2, 0, 4, 2, 0},
		{4, 0, 3, 3, 1},
		{0, 4, 5, 1, 0},
	} {
		resp, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "a", UserId: "u", SessionId: "s", NumRecentEvents: tc.recent, AfterSequence: tc.after})
		if err != nil {
			t.Fatal(err)
		}
		evs := resp.GetEvents()
		if len(evs) != tc.n || evs[0].GetSequence() != tc.first || resp.GetOmittedEvents() != tc.omitted {
			t.Errorf("recent %d after %d: %d events from #%d, %d omitted; want %d from #%d, %d omitted",
				tc.recent, tc.after, len(evs), evs[0].GetSequence(), resp.GetOmittedEvents(), tc.n, tc.first, tc.omitted)
		}
	}
}

var limitsAuth = `principals:
  - {name: alice, token_sha256: ` + sha("alice-token") + `, apps: ["*"], users: [self]}
  - {name: bob, token_sha256: ` + sha("bob-token") + `, apps: ["*"], users: [self]}
  - {name: root, token_sha256: ` + sha("root-token") + `, admin: true}
`

// TestRunLimits: runs in progress are bounded per principal and in total
// (ResourceExhausted); a slot frees when its run ends, and a run that never
// starts takes none.
func TestRunLimits(t *testing.T) {
	g := newGate()
	e := newEnv(t, withRunnerApps(t, func(t *testing.T) apps.App { return g.app(t) }), withAuth(t, limitsAuth),
		withLimits(Limits{MaxRuns: 2, MaxRunsPerPrincipal: 1}))
	for _, u := range []string{"alice", "bob", "root"} {
		for _, s := range []string{"s1", "s2"} {
			if _, err := e.sessions.CreateSession(as(t.Context(), u), &servicev1.CreateSessionRequest{AppName: "gate", UserId: u, SessionId: s}); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := func(who, session, msg string) (*agentrunnerv1.Run, error) {
		resp, err := e.runner.StartRun(as(t.Context(), who), &servicev1.StartRunRequest{AppName: "gate", UserId: who, SessionId: session, NewMessage: text(msg)})
		return resp.GetRun(), err
	}
	a1, err := start("alice", "s1", "a1")
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	_, err = start("alice", "s2", "a2")
	wantCode(t, err, codes.ResourceExhausted, "")
	if _, err := start("bob", "s1", "b1"); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	_, err = start("root", "s1", "r1")
	wantCode(t, err, codes.ResourceExhausted, "")
	err = streamErr(e.runner.Run(as(t.Context(), "root"), &servicev1.RunRequest{AppName: "gate", UserId: "root", SessionId: "s2", NewMessage: text("r2")}))
	wantCode(t, err, codes.ResourceExhausted, "")

	// alice's run ends: her slot frees.
	g.release("a1")
	if err := streamErr(e.runner.AttachRun(as(t.Context(), "alice"), &servicev1.AttachRunRequest{RunId: a1.GetRunId()})); err != nil {
		t.Fatal(err)
	}
	if got := e.grpc.srv.Desk().RunsInProgress(); got != 1 {
		t.Errorf("%d runs counted after alice's ended, want 1 (bob's)", got)
	}
	// Runs that cannot start (no such session) take no slot, through
	// either RPC, however many there are.
	for range 3 {
		_, err = start("alice", "missing", "x")
		wantCode(t, err, codes.NotFound, "")
		err = streamErr(e.runner.Run(as(t.Context(), "alice"), &servicev1.RunRequest{AppName: "gate", UserId: "alice", SessionId: "missing", NewMessage: text("x")}))
		wantCode(t, err, codes.NotFound, "")
	}
	g.release("a2")
	if _, err := start("alice", "s2", "a2"); err != nil {
		t.Errorf("alice's second run after her first ended: %v", err)
	}
	g.release("b1")
}

// TestContentLimits: a content with more parts than the limit, or an
// inline part or an artifact larger than its limit, is InvalidArgument
// naming the field, through every RPC that takes one, and nothing is
// stored; at the limits the same calls go through.
func TestContentLimits(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)), withLimits(Limits{MaxParts: 2, MaxInlineBytes: 10, MaxArtifactBytes: 16}))
	e.createSession(t, "echo", "u", "s")
	parts := func(n int) *agentrunnerv1.Content {
		c := &agentrunnerv1.Content{Role: "user"}
		for range n {
			c.Parts = append(c.Parts, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "x"}})
		}
		return c
	}
	blob := func(n int) *agentrunnerv1.Part {
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "application/octet-stream", Data: make([]byte, n)}}}
	}
	inline := func(n int) *agentrunnerv1.Content {
		return &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{blob(n)}}
	}
	run := func(c *agentrunnerv1.Content) error {
		return streamErr(e.runner.Run(t.Context(), &servicev1.RunRequest{AppName: "echo", UserId: "u", SessionId: "s", NewMessage: c}))
	}
	start := func(c *agentrunnerv1.Content) error {
		_, err := e.runner.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "echo", UserId: "u", SessionId: "s", NewMessage: c})
		return err
	}
	appendEv := func(c *agentrunnerv1.Content) error {
		_, err := e.sessions.AppendEvent(t.Context(), &servicev1.AppendEventRequest{AppName: "echo", UserId: "u", SessionId: "s", Event: &agentrunnerv1.Event{Author: "user", Content: c}})
		return err
	}
	refused := []struct {
		name, field string
		call        func() error
	}{
		{"Run, parts", "new_message.parts", func() error { return run(parts(3)) }},
		{"Run, inline", "new_message.parts[0].inline_data.data", func() error { return run(inline(11)) }},
		{"StartRun, parts", "new_message.parts", func() error { return start(parts(3)) }},
		{"AppendEvent, parts", "event.content.parts", func() error { return appendEv(parts(3)) }},
		{"AppendEvent, inline", "event.content.parts[0].inline_data.data", func() error { return appendEv(inline(11)) }},
		{"ResumeRun, answers", "answers.parts", func() error {
			answers := &agentrunnerv1.Content{Role: "user"}
			for i := range 3 {
				answers.Parts = append(answers.Parts, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{
					Id: fmt.Sprint("call-", i), Name: "f", Response: mustStruct(t, map[string]any{"ok": true}),
				}}})
			}
			return streamErr(e.runner.ResumeRun(t.Context(), &servicev1.ResumeRunRequest{RunId: "any", Answers: answers}))
		}},
		{"SaveArtifact", "artifact.inline_data.data", func() error {
			_, err := e.artifacts.SaveArtifact(t.Context(), &servicev1.SaveArtifactRequest{AppName: "echo", UserId: "u", SessionId: "s", Filename: "f", Artifact: blob(17)})
			return err
		}},
	}
	for _, c := range refused {
		wantCode(t, c.call(), codes.InvalidArgument, c.field)
	}
	got, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "echo", UserId: "u", SessionId: "s"})
	if err != nil || len(got.GetEvents()) != 0 {
		t.Fatalf("refused calls stored %d events (%v)", len(got.GetEvents()), err)
	}
	if err := run(parts(2)); err != nil {
		t.Errorf("Run at the parts limit: %v", err)
	}
	if err := appendEv(inline(10)); err != nil {
		t.Errorf("AppendEvent at the inline limit: %v", err)
	}
	if _, err := e.artifacts.SaveArtifact(t.Context(), &servicev1.SaveArtifactRequest{AppName: "echo", UserId: "u", SessionId: "s", Filename: "f", Artifact: blob(16)}); err != nil {
		t.Errorf("SaveArtifact at the limit: %v", err)
	}
}

// TestRequestSizeLimit: a request larger than MaxRequestBytes is refused
// by gRPC with ResourceExhausted before any handler runs, while responses
// keep the message limit: a session whose reply is larger than the
// request limit still reads.
func TestRequestSizeLimit(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)), func(c *Config) { c.MaxRequestBytes = 4096 })
	e.createSession(t, "echo", "u", "s")
	big := strings.Repeat("x", 5000)
	_, err := e.sessions.AppendEvent(t.Context(), &servicev1.AppendEventRequest{AppName: "echo", UserId: "u", SessionId: "s", Event: &agentrunnerv1.Event{Author: "user", Content: text(big)}})
	wantCode(t, err, codes.ResourceExhausted, "")
	for range 3 {
		if _, err := e.sessions.AppendEvent(t.Context(), &servicev1.AppendEventRequest{AppName: "echo", UserId: "u", SessionId: "s", Event: &agentrunnerv1.Event{Author: "user", Content: text(big[:3000])}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "echo", UserId: "u", SessionId: "s"})
	if err != nil || len(got.GetEvents()) != 3 || proto.Size(got) <= 4096 {
		t.Fatalf("GetSession: %d events, %d bytes (%v); want all 3 in a reply over the request limit", len(got.GetEvents()), proto.Size(got), err)
	}
}

// TestClaimGateCountsAgainstMaxRuns: the gate a runner asks before it
// takes a run from a shared queue (Server.ClaimGate) holds a slot of
// --max-runs like an admitted run: while it holds the only one, StartRun
// is ResourceExhausted and the gate refuses a second claim; a claim whose
// run ended, or that was released unused, frees its slot.
func TestClaimGateCountsAgainstMaxRuns(t *testing.T) {
	g := newGate()
	e := newEnv(t, withRunnerApps(t, func(t *testing.T) apps.App { return g.app(t) }), withLimits(Limits{MaxRuns: 1}))
	for _, s := range []string{"s1", "s2"} {
		if _, err := e.sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "gate", UserId: "u", SessionId: s}); err != nil {
			t.Fatal(err)
		}
	}
	start := func(session, msg string) (*agentrunnerv1.Run, error) {
		resp, err := e.runner.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "gate", UserId: "u", SessionId: session, NewMessage: text(msg)})
		return resp.GetRun(), err
	}
	gate := e.grpc.srv.ClaimGate()

	claim, ok := gate.TryClaim()
	if !ok {
		t.Fatal("a claim on an idle server was refused")
	}
	_, err := start("s1", "m1")
	wantCode(t, err, codes.ResourceExhausted, "")
	if _, ok := gate.TryClaim(); ok {
		t.Fatal("a second claim was taken beside the first, over --max-runs 1")
	}
	// The claimed run ends: its slot frees.
	done := make(chan struct{})
	claim.Bind(done)
	close(done)
	run, err := start("s1", "m1")
	if err != nil {
		t.Fatalf("StartRun after the claimed run ended: %v", err)
	}
	<-g.entered
	// An admitted run holds the slot against claims too.
	if _, ok := gate.TryClaim(); ok {
		t.Fatal("a claim was taken beside a running run, over --max-runs 1")
	}
	g.release("m1")
	if err := streamErr(e.runner.AttachRun(t.Context(), &servicev1.AttachRunRequest{RunId: run.GetRunId()})); err != nil {
		t.Fatal(err)
	}
	// A claim released unused gives its slot back at once.
	claim, ok = gate.TryClaim()
	if !ok {
		t.Fatal("a claim was refused after the run ended")
	}
	claim.Release()
	if got := e.grpc.srv.Desk().RunsInProgress(); got != 0 {
		t.Fatalf("%d runs counted after the claim was released, want 0", got)
	}
	if _, err := start("s2", "m2"); err != nil {
		t.Fatalf("StartRun after the claim was released: %v", err)
	}
	<-g.entered
	g.release("m2")
}
