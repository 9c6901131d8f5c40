package server

import (
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestRefusesUnstorableInput: ids and names with control characters,
// state keys with them, timestamps protobuf cannot represent and event ids
// that are not ids are refused through gRPC with InvalidArgument naming
// the field, and nothing is written.
func TestRefusesUnstorableInput(t *testing.T) {
	e := newEnv(t)
	e.createSession(t, "app", "u1", "s1")
	stateWith := func(key string) *structpb.Struct {
		return &structpb.Struct{Fields: map[string]*structpb.Value{key: structpb.NewStringValue("v")}}
	}
	event := func(modify func(*agentrunnerv1.Event)) *servicev1.AppendEventRequest {
		ev := &agentrunnerv1.Event{Author: "bot", Content: text("hi")}
		modify(ev)
		return &servicev1.AppendEventRequest{AppName: "app", UserId: "u1", SessionId: "s1", Event: ev}
	}
	tests := []struct {
		name  string
		call  func() error
		field string
	}{
		{"session id with ESC", func() error {
			_, err := e.sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "app", UserId: "u1", SessionId: "s\x1b[2J"})
			return err
		}, "session_id"},
		{"user id with NUL", func() error {
			_, err := e.sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "app", UserId: "u\x00", SessionId: "s2"})
			return err
		}, "user_id"},
		{"state key with a newline", func() error {
			_, err := e.sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "app", UserId: "u1", SessionId: "s3", State: stateWith("a\nb")})
			return err
		}, "state"},
		{"author with a newline", func() error {
			_, err := e.sessions.AppendEvent(t.Context(), event(func(ev *agentrunnerv1.Event) { ev.Author = "bot\nINFO forged" }))
			return err
		}, "event.author"},
		{"timestamp nanos out of range", func() error {
			_, err := e.sessions.AppendEvent(t.Context(), event(func(ev *agentrunnerv1.Event) { ev.Timestamp = &timestamppb.Timestamp{Seconds: 1, Nanos: 2e9} }))
			return err
		}, "event.timestamp"},
		{"timestamp in year 10000", func() error {
			_, err := e.sessions.AppendEvent(t.Context(), event(func(ev *agentrunnerv1.Event) { ev.Timestamp = &timestamppb.Timestamp{Seconds: 253402300800} }))
			return err
		}, "event.timestamp"},
		{"event id with a tab", func() error {
			_, err := e.sessions.AppendEvent(t.Context(), event(func(ev *agentrunnerv1.Event) { ev.Id = "e\t1" }))
			return err
		}, "event.id"},
		{"state delta key with ESC", func() error {
			_, err := e.sessions.AppendEvent(t.Context(), event(func(ev *agentrunnerv1.Event) {
				ev.Actions = &agentrunnerv1.EventActions{StateDelta: stateWith("k\x1b")}
			}))
			return err
		}, "event.actions.state_delta"},
		{"artifact filename with a newline", func() error {
			_, err := e.artifacts.SaveArtifact(t.Context(), &servicev1.SaveArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "a\nb",
				Artifact: &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "x"}}})
			return err
		}, "filename"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.call(), codes.InvalidArgument, tc.field)
		})
	}
	// Nothing was written: no new session, no event, no artifact.
	list, err := e.sessions.ListSessions(t.Context(), &servicev1.ListSessionsRequest{AppName: "app", UserId: "u1"})
	if err != nil || len(list.GetSessions()) != 1 {
		t.Errorf("sessions after the refusals: %v, %v; want only s1", list.GetSessions(), err)
	}
	got, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1"})
	if err != nil || len(got.GetEvents()) != 0 {
		t.Errorf("s1 after the refusals: %d events, %v; want none", len(got.GetEvents()), err)
	}
	arts, err := e.artifacts.ListArtifacts(t.Context(), &servicev1.ListArtifactsRequest{AppName: "app", UserId: "u1", SessionId: "s1"})
	if err != nil || len(arts.GetArtifacts()) != 0 {
		t.Errorf("artifacts after the refusals: %v, %v; want none", arts, err)
	}
}
