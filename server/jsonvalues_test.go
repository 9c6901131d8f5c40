package server

import (
	"math"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestRefusesValuesJSONCannotCarry: a Value holding NaN or ±Infinity, or
// no kind at all, travels over gRPC's binary encoding but has no JSON
// mapping; stored, it broke every JSON read of the session (and an
// admin's listing of all users). Wherever it sits (state, a state delta,
// a call's arguments, a function response, custom metadata, deep in a
// struct or a list), it is refused with InvalidArgument naming the
// field, and nothing is written.
func TestRefusesValuesJSONCannotCarry(t *testing.T) {
	e := newEnv(t, withApps(fakeApps{"app": runFunc(nil)}))
	e.createSession(t, "app", "u1", "s1")
	one := func(key string, v *structpb.Value) *structpb.Struct {
		return &structpb.Struct{Fields: map[string]*structpb.Value{"ok": structpb.NewStringValue("fine"), key: v}}
	}
	nested := structpb.NewStructValue(one("deep", structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{
		structpb.NewNumberValue(1), structpb.NewNumberValue(math.Inf(-1)),
	}})))
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
		{"NaN in a new session's state", func() error {
			_, err := e.sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "app", UserId: "u1", SessionId: "s2", State: one("n", structpb.NewNumberValue(math.NaN()))})
			return err
		}, `state["n"]`},
		{"-Inf in a list in a struct in a state delta", func() error {
			_, err := e.sessions.AppendEvent(t.Context(), event(func(ev *agentrunnerv1.Event) {
				ev.Actions = &agentrunnerv1.EventActions{StateDelta: one("x", nested)}
			}))
			return err
		}, `event.actions.state_delta["x"]["deep"][1]`},
		{"a Value with no kind in a call's arguments", func() error {
			_, err := e.sessions.AppendEvent(t.Context(), event(func(ev *agentrunnerv1.Event) {
				ev.Content = &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{
					FunctionCall: &agentrunnerv1.FunctionCall{Id: "c1", Name: "f", Args: one("a", &structpb.Value{})}}}}}
			}))
			return err
		}, `event.content.parts[0].function_call.args["a"]`},
		{"+Inf in custom metadata", func() error {
			_, err := e.sessions.AppendEvent(t.Context(), event(func(ev *agentrunnerv1.Event) {
				ev.CustomMetadata = one("m", structpb.NewNumberValue(math.Inf(1)))
			}))
			return err
		}, `event.custom_metadata["m"]`},
		{"NaN in a run's function response", func() error {
			stream, err := e.runner.Run(t.Context(), &servicev1.RunRequest{AppName: "app", UserId: "u1", SessionId: "s1",
				NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionResponse{
					FunctionResponse: &agentrunnerv1.FunctionResponse{Id: "c1", Name: "f", Response: one("r", structpb.NewNumberValue(math.NaN()))}}}}}})
			if err != nil {
				return err
			}
			_, err = stream.Recv()
			return err
		}, `new_message.parts[0].function_response.response["r"]`},
		{"NaN in a run's state delta", func() error {
			stream, err := e.runner.Run(t.Context(), &servicev1.RunRequest{AppName: "app", UserId: "u1", SessionId: "s1",
				NewMessage: text("hi"), StateDelta: one("d", structpb.NewNumberValue(math.NaN()))})
			if err != nil {
				return err
			}
			_, err = stream.Recv()
			return err
		}, `state_delta["d"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.call(), codes.InvalidArgument, tc.field)
		})
	}
	list, err := e.sessions.ListSessions(t.Context(), &servicev1.ListSessionsRequest{AppName: "app", UserId: "u1"})
	if err != nil || len(list.GetSessions()) != 1 {
		t.Errorf("sessions after the refusals: %v, %v; want only s1", list.GetSessions(), err)
	}
	got, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1"})
	if err != nil || len(got.GetEvents()) != 0 {
		t.Errorf("s1 after the refusals: %d events, %v; want none", len(got.GetEvents()), err)
	}
	// Finite numbers, nulls and nested values are taken.
	ok := one("n", structpb.NewNumberValue(math.MaxFloat64))
	ok.Fields["null"] = structpb.NewNullValue()
	if _, err := e.sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "app", UserId: "u1", SessionId: "s3", State: ok}); err != nil {
		t.Errorf("a state JSON carries was refused: %v", err)
	}
}
