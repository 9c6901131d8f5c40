package server

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// newLimitedEnv serves a store that keeps no item larger than a response
// can carry, as cmd/agentrunner configures it.
func newLimitedEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "agentrunner.db"), boltstore.Options{MaxItemBytes: MaxItemBytes(DefaultMaxMessageBytes)})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cfg := Config{Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	return startEnv(t, st, cfg, logs)
}

func bigText(i, n int) *agentrunnerv1.Event {
	return &agentrunnerv1.Event{Author: "agent", Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprintf("%05d ", i) + strings.Repeat("x", n)}}}}}
}

// TestSessionLargerThanAMessage: a session of 200 MiB of events reads
// back completely by paging ListEvents, every page within the message
// limit; GetSession succeeds with the newest events that fit and says how
// many it left out.
func TestSessionLargerThanAMessage(t *testing.T) {
	e := newLimitedEnv(t)
	ctx := t.Context()
	k := store.SessionKey{App: "app", User: "u", Session: "huge"}
	e.createSession(t, k.App, k.User, k.Session)
	const n, size = 200, 1 << 20
	for i := range n {
		if _, err := e.store.AppendEvent(ctx, k, bigText(i, size)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: k.App, UserId: k.User, SessionId: k.Session})
	if err != nil {
		t.Fatalf("GetSession on a 200 MiB session: %v", err)
	}
	evs := got.GetEvents()
	if len(evs) == 0 || len(evs) >= n || got.GetOmittedEvents() != uint64(n-len(evs)) {
		t.Fatalf("GetSession: %d events, %d omitted; want the newest that fit and the rest counted", len(evs), got.GetOmittedEvents())
	}
	if evs[len(evs)-1].GetSequence() != n || evs[0].GetSequence() != got.GetOmittedEvents()+1 {
		t.Fatalf("GetSession returned sequences %d..%d", evs[0].GetSequence(), evs[len(evs)-1].GetSequence())
	}
	if sz := proto.Size(got); sz > DefaultMaxMessageBytes {
		t.Fatalf("GetSession response of %d bytes", sz)
	}
	var next uint64 = 1
	req := &servicev1.ListEventsRequest{AppName: k.App, UserId: k.User, SessionId: k.Session, PageSize: 1000}
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatal("ListEvents does not terminate")
		}
		resp, err := e.sessions.ListEvents(ctx, req)
		if err != nil {
			t.Fatalf("ListEvents page %d: %v", pages, err)
		}
		for _, ev := range resp.GetEvents() {
			if ev.GetSequence() != next {
				t.Fatalf("page %d: sequence %d, want %d", pages, ev.GetSequence(), next)
			}
			next++
		}
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if next != n+1 {
		t.Fatalf("ListEvents listed %d events, want %d", next-1, n)
	}
}

// TestListSessionsLargerThanAMessage: sessions whose states add up past
// the message limit list page by page.
func TestListSessionsLargerThanAMessage(t *testing.T) {
	e := newLimitedEnv(t)
	ctx := t.Context()
	state, err := structpb.NewStruct(map[string]any{"notes": strings.Repeat("n", 3<<20)})
	if err != nil {
		t.Fatal(err)
	}
	const n = 24 // 72 MiB of state
	for i := range n {
		if _, err := e.sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "app", UserId: "u", SessionId: fmt.Sprintf("s%02d", i), State: state}); err != nil {
			t.Fatal(err)
		}
	}
	req := &servicev1.ListSessionsRequest{AppName: "app", UserId: "u", PageSize: 1000}
	var listed []string
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatal("ListSessions does not terminate")
		}
		resp, err := e.sessions.ListSessions(ctx, req)
		if err != nil {
			t.Fatalf("ListSessions page %d: %v", pages, err)
		}
		for _, s := range resp.GetSessions() {
			listed = append(listed, s.GetSessionId())
		}
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if len(listed) != n || listed[0] != "s00" || listed[n-1] != fmt.Sprintf("s%02d", n-1) {
		t.Fatalf("listed %d sessions: %v", len(listed), listed)
	}
}

// TestItemLargerThanAMessageIsRefused: an event, a state or an artifact
// that could not be read back in one message is refused with
// InvalidArgument naming the limit, and nothing is stored.
func TestItemLargerThanAMessageIsRefused(t *testing.T) {
	e := newLimitedEnv(t)
	ctx := t.Context()
	e.createSession(t, "app", "u", "s")
	over := MaxItemBytes(DefaultMaxMessageBytes) + 1
	limit := fmt.Sprintf("limit of %d bytes", MaxItemBytes(DefaultMaxMessageBytes))
	_, err := e.sessions.AppendEvent(ctx, &servicev1.AppendEventRequest{AppName: "app", UserId: "u", SessionId: "s", Event: bigText(0, over)})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), limit) {
		t.Fatalf("AppendEvent of %d bytes = %v, want InvalidArgument naming the %s", over, err, limit)
	}
	state, _ := structpb.NewStruct(map[string]any{"big": strings.Repeat("s", over)})
	_, err = e.sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "app", UserId: "u", SessionId: "t", State: state})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), limit) {
		t.Fatalf("CreateSession with %d bytes of state = %v, want InvalidArgument naming the %s", over, err, limit)
	}
	_, err = e.artifacts.SaveArtifact(ctx, &servicev1.SaveArtifactRequest{AppName: "app", UserId: "u", SessionId: "s", Filename: "big.txt", Artifact: &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: strings.Repeat("a", over)}}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), limit) {
		t.Fatalf("SaveArtifact of %d bytes = %v, want InvalidArgument naming the %s", over, err, limit)
	}
	got, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u", SessionId: "s"})
	if err != nil || len(got.GetEvents()) != 0 {
		t.Fatalf("session after the refused writes: %d events, %v", len(got.GetEvents()), err)
	}
	if _, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u", SessionId: "t"}); status.Code(err) != codes.NotFound {
		t.Fatalf("the refused session exists: %v", err)
	}
}

// TestToolResultLargerThanAMessage: a tool whose result could not be read
// back in one message ends its run with a clear error naming the limit;
// nothing half-written stays, and the session takes the next run.
func TestToolResultLargerThanAMessage(t *testing.T) {
	huge := func(tool.Context, struct{}) (map[string]any, error) {
		return map[string]any{"blob": strings.Repeat("h", MaxItemBytes(DefaultMaxMessageBytes)+10)}, nil
	}
	app := func(t *testing.T) apps.App {
		a := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "worker", Model: toolModel{call: "huge"}, Tools: []tool.Tool{mustTool(t, "huge", huge)}}))
		return apps.App{Name: "big", Root: a}
	}
	e := newLimitedEnv(t, withRunnerApps(t, app))
	ctx := t.Context()
	e.createSession(t, "big", "u", "s")
	res := e.run(t, ctx, &servicev1.RunRequest{AppName: "big", UserId: "u", SessionId: "s", NewMessage: text("go")})
	msg := fmt.Sprint(res.status, res.errors)
	if !strings.Contains(msg, "exceeds the limit of") {
		t.Fatalf("run with a tool result past the limit: status %v, in-band errors %v; want the limit named", res.status, res.errors)
	}
	t.Logf("outcome: status %v, in-band %v", res.status, res.errors)
	if last := res.runs[len(res.runs)-1]; last.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_FAILED {
		t.Errorf("final record %v, want FAILED", last)
	}
	got, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "big", UserId: "u", SessionId: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range got.GetEvents() {
		if proto.Size(ev) > MaxItemBytes(DefaultMaxMessageBytes) {
			t.Fatalf("an event of %d bytes was stored", proto.Size(ev))
		}
	}
	// The session goes on: the next run starts (and meets the same tool).
	if again := e.run(t, ctx, &servicev1.RunRequest{AppName: "big", UserId: "u", SessionId: "s", NewMessage: text("again")}); len(again.runs) == 0 {
		t.Fatalf("the next run did not start: %v", again.status)
	}
}
