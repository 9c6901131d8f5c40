package server

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// TestAppendEventIDs: an event id the session already holds is not
// stored twice: the same event again (a retry) answers the stored one,
// other content under the id is AlreadyExists naming the event, also for
// an id the runner gave an event of a run; nothing is appended either
// way.
func TestAppendEventIDs(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, llmApp))
	ctx := t.Context()
	e.createSession(t, "llm", "u1", "s")
	req := func(ev *agentrunnerv1.Event) *servicev1.AppendEventRequest {
		return &servicev1.AppendEventRequest{AppName: "llm", UserId: "u1", SessionId: "s", Event: ev}
	}
	ev := &agentrunnerv1.Event{Id: "note-1", Author: "operator", Content: text("a note")}
	first, err := e.sessions.AppendEvent(ctx, req(ev))
	if err != nil {
		t.Fatal(err)
	}
	retry, err := e.sessions.AppendEvent(ctx, req(proto.CloneOf(ev)))
	if err != nil || !proto.Equal(retry.GetEvent(), first.GetEvent()) {
		t.Fatalf("retry = %v, %v; want the stored event %v", retry.GetEvent(), err, first.GetEvent())
	}
	other := proto.CloneOf(ev)
	other.Content = text("another note")
	_, err = e.sessions.AppendEvent(ctx, req(other))
	wantCode(t, err, codes.AlreadyExists, "")
	if msg := statusMessage(err); !strings.Contains(msg, `"note-1"`) || !strings.Contains(msg, "event 1 ") {
		t.Errorf("message %q does not name the id and the event holding it", msg)
	}

	res := e.run(t, ctx, runReq("llm", "s", "hello"))
	if res.status != nil || len(res.events) == 0 {
		t.Fatalf("run: %v", res.status)
	}
	copied := proto.CloneOf(res.events[len(res.events)-1])
	copied.Sequence = 0
	copied.Content = text("not what the agent said")
	_, err = e.sessions.AppendEvent(ctx, req(copied))
	wantCode(t, err, codes.AlreadyExists, "")

	got, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "llm", UserId: "u1", SessionId: "s"})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, ev := range got.GetEvents() {
		ids[ev.GetId()]++
		if ids[ev.GetId()] > 1 {
			t.Fatalf("event id %s stored twice", ev.GetId())
		}
	}
	if want := 1 + len(res.events); len(got.GetEvents()) < want {
		t.Fatalf("session holds %d events, want at least %d", len(got.GetEvents()), want)
	}
}
