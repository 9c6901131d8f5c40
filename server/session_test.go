package server

import (
	"context"
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestSessionServiceHappyPath(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	state, err := structpb.NewStruct(map[string]any{"topic": "weather", "user:lang": "en", "temp:scratch": 1})
	if err != nil {
		t.Fatal(err)
	}

	created, err := e.sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1", State: state})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	if got := created.GetSession(); got.GetSessionId() != "s1" || got.GetState().GetFields()["topic"].GetStringValue() != "weather" {
		t.Errorf("CreateSession returned %v", got)
	}
	if _, ok := created.GetSession().GetState().GetFields()["temp:scratch"]; ok {
		t.Error("temp: key was stored")
	}

	generated, err := e.sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "app", UserId: "u1"})
	if err != nil {
		t.Fatalf("CreateSession without id: %v", err)
	}
	if generated.GetSession().GetSessionId() == "" {
		t.Error("CreateSession without id returned no id")
	}
	// The user: key is shared by the user's other sessions.
	if got := generated.GetSession().GetState().GetFields()["user:lang"].GetStringValue(); got != "en" {
		t.Errorf("user:lang in the second session = %q, want en", got)
	}

	var seqs []uint64
	for i, author := range []string{"user", "agent", "user"} {
		resp, err := e.sessions.AppendEvent(ctx, &servicev1.AppendEventRequest{
			AppName: "app", UserId: "u1", SessionId: "s1",
			Event: &agentrunnerv1.Event{Author: author, Content: text(strings.Repeat("x", i+1))},
		})
		if err != nil {
			t.Fatalf("AppendEvent %d: %v", i, err)
		}
		ev := resp.GetEvent()
		if ev.GetId() == "" || ev.GetTimestamp() == nil {
			t.Errorf("AppendEvent %d returned no id or timestamp: %v", i, ev)
		}
		seqs = append(seqs, ev.GetSequence())
	}
	if seqs[0] != 1 || seqs[1] != 2 || seqs[2] != 3 {
		t.Errorf("sequences = %v, want [1 2 3]", seqs)
	}

	got, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1"})
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	if n := len(got.GetEvents()); n != 3 || got.GetSession().GetLastSequence() != 3 {
		t.Errorf("GetSession: %d events, last_sequence %d; want 3, 3", n, got.GetSession().GetLastSequence())
	}
	recent, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1", NumRecentEvents: 2})
	if err != nil {
		t.Fatalf("GetSession recent: %v", err)
	}
	if evs := recent.GetEvents(); len(evs) != 2 || evs[0].GetSequence() != 2 || evs[1].GetSequence() != 3 {
		t.Errorf("GetSession num_recent_events=2 returned %v", evs)
	}
	after, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1", AfterSequence: 2})
	if err != nil {
		t.Fatalf("GetSession after: %v", err)
	}
	if evs := after.GetEvents(); len(evs) != 1 || evs[0].GetSequence() != 3 {
		t.Errorf("GetSession after_sequence=2 returned %v", evs)
	}

	// ListEvents pages through all three.
	var listed []uint64
	token := ""
	for range 10 {
		resp, err := e.sessions.ListEvents(ctx, &servicev1.ListEventsRequest{AppName: "app", UserId: "u1", SessionId: "s1", PageSize: 2, PageToken: token})
		if err != nil {
			t.Fatalf("ListEvents: %v", err)
		}
		for _, ev := range resp.GetEvents() {
			listed = append(listed, ev.GetSequence())
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	if len(listed) != 3 || listed[0] != 1 || listed[2] != 3 {
		t.Errorf("ListEvents pages = %v, want [1 2 3]", listed)
	}

	list, err := e.sessions.ListSessions(ctx, &servicev1.ListSessionsRequest{AppName: "app", UserId: "u1"})
	if err != nil {
		t.Fatalf("ListSessions: %v", err)
	}
	if n := len(list.GetSessions()); n != 2 {
		t.Errorf("ListSessions returned %d sessions, want 2", n)
	}

	if _, err := e.sessions.DeleteSession(ctx, &servicev1.DeleteSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1"}); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	_, err = e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1"})
	wantCode(t, err, codes.NotFound, "")
}

func TestSessionServiceErrors(t *testing.T) {
	e := newEnv(t)
	e.createSession(t, "app", "u1", "s1")
	long := strings.Repeat("a", 129)
	ev := &agentrunnerv1.Event{Author: "user", Content: text("hi")}
	key := func(r *servicev1.AppendEventRequest) *servicev1.AppendEventRequest {
		r.AppName, r.UserId, r.SessionId = "app", "u1", "s1"
		return r
	}

	tests := []struct {
		name  string
		call  func(context.Context) error
		code  codes.Code
		field string
	}{
		{"create/no app", func(ctx context.Context) error {
			_, err := e.sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{UserId: "u1"})
			return err
		}, codes.InvalidArgument, "app_name"},
		{"create/no user", func(ctx context.Context) error {
			_, err := e.sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "app"})
			return err
		}, codes.InvalidArgument, "user_id"},
		{"create/long session id", func(ctx context.Context) error {
			_, err := e.sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "app", UserId: "u1", SessionId: long})
			return err
		}, codes.InvalidArgument, "session_id"},
		{"create/128-byte id is fine", func(ctx context.Context) error {
			_, err := e.sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "app", UserId: "u1", SessionId: long[:128]})
			return err
		}, codes.OK, ""},
		{"create/exists", func(ctx context.Context) error {
			_, err := e.sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1"})
			return err
		}, codes.AlreadyExists, ""},
		{"get/no session id", func(ctx context.Context) error {
			_, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u1"})
			return err
		}, codes.InvalidArgument, "session_id"},
		{"get/negative num_recent_events", func(ctx context.Context) error {
			_, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1", NumRecentEvents: -1})
			return err
		}, codes.InvalidArgument, "num_recent_events"},
		{"get/missing", func(ctx context.Context) error {
			_, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "nope"})
			return err
		}, codes.NotFound, ""},
		{"get/other user", func(ctx context.Context) error {
			_, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u2", SessionId: "s1"})
			return err
		}, codes.NotFound, ""},
		{"list/no app", func(ctx context.Context) error {
			_, err := e.sessions.ListSessions(ctx, &servicev1.ListSessionsRequest{UserId: "u1"})
			return err
		}, codes.InvalidArgument, "app_name"},
		{"list/negative page_size", func(ctx context.Context) error {
			_, err := e.sessions.ListSessions(ctx, &servicev1.ListSessionsRequest{AppName: "app", PageSize: -1})
			return err
		}, codes.InvalidArgument, "page_size"},
		{"list/bad page token", func(ctx context.Context) error {
			_, err := e.sessions.ListSessions(ctx, &servicev1.ListSessionsRequest{AppName: "app", PageToken: "!!not a token"})
			return err
		}, codes.InvalidArgument, ""},
		{"list/long user", func(ctx context.Context) error {
			_, err := e.sessions.ListSessions(ctx, &servicev1.ListSessionsRequest{AppName: "app", UserId: long})
			return err
		}, codes.InvalidArgument, "user_id"},
		{"delete/missing", func(ctx context.Context) error {
			_, err := e.sessions.DeleteSession(ctx, &servicev1.DeleteSessionRequest{AppName: "app", UserId: "u1", SessionId: "nope"})
			return err
		}, codes.NotFound, ""},
		{"delete/no user", func(ctx context.Context) error {
			_, err := e.sessions.DeleteSession(ctx, &servicev1.DeleteSessionRequest{AppName: "app", SessionId: "s1"})
			return err
		}, codes.InvalidArgument, "user_id"},
		{"append/no event", func(ctx context.Context) error {
			_, err := e.sessions.AppendEvent(ctx, key(&servicev1.AppendEventRequest{}))
			return err
		}, codes.InvalidArgument, "event"},
		{"append/partial", func(ctx context.Context) error {
			_, err := e.sessions.AppendEvent(ctx, key(&servicev1.AppendEventRequest{Event: &agentrunnerv1.Event{Author: "a", Partial: true}}))
			return err
		}, codes.InvalidArgument, "event.partial"},
		{"append/no author", func(ctx context.Context) error {
			_, err := e.sessions.AppendEvent(ctx, key(&servicev1.AppendEventRequest{Event: &agentrunnerv1.Event{Content: text("hi")}}))
			return err
		}, codes.InvalidArgument, "event.author"},
		{"append/empty part", func(ctx context.Context) error {
			_, err := e.sessions.AppendEvent(ctx, key(&servicev1.AppendEventRequest{Event: &agentrunnerv1.Event{
				Author: "a", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{}}},
			}}))
			return err
		}, codes.InvalidArgument, "event.content.parts[0]"},
		{"append/missing session", func(ctx context.Context) error {
			_, err := e.sessions.AppendEvent(ctx, &servicev1.AppendEventRequest{AppName: "app", UserId: "u1", SessionId: "nope", Event: ev})
			return err
		}, codes.NotFound, ""},
		{"append/no app", func(ctx context.Context) error {
			_, err := e.sessions.AppendEvent(ctx, &servicev1.AppendEventRequest{UserId: "u1", SessionId: "s1", Event: ev})
			return err
		}, codes.InvalidArgument, "app_name"},
		{"list events/negative page_size", func(ctx context.Context) error {
			_, err := e.sessions.ListEvents(ctx, &servicev1.ListEventsRequest{AppName: "app", UserId: "u1", SessionId: "s1", PageSize: -5})
			return err
		}, codes.InvalidArgument, "page_size"},
		{"list events/missing session", func(ctx context.Context) error {
			_, err := e.sessions.ListEvents(ctx, &servicev1.ListEventsRequest{AppName: "app", UserId: "u1", SessionId: "nope"})
			return err
		}, codes.NotFound, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.call(t.Context()), tc.code, tc.field)
		})
	}
}
