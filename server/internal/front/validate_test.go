package front

import (
	"strings"
	"testing"
	"unicode/utf8"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/grpc/codes"
)

// Go clients refuse to marshal invalid UTF-8, so these cases are checked on
// the validators directly: other clients may send such bytes.
func TestValidateNonUTF8(t *testing.T) {
	bad := "bad\xffid"
	tests := []struct {
		name  string
		err   error
		field string
	}{
		{"create/user", second(validateCreateSession(&servicev1.CreateSessionRequest{AppName: "app", UserId: bad})), "user_id"},
		{"create/session", second(validateCreateSession(&servicev1.CreateSessionRequest{AppName: "app", UserId: "u", SessionId: bad})), "session_id"},
		{"get/app", second(validateGetSession(&servicev1.GetSessionRequest{AppName: bad, UserId: "u", SessionId: "s"})), "app_name"},
		{"list/user", validateListSessions(&servicev1.ListSessionsRequest{AppName: "app", UserId: bad}), "user_id"},
		{"append/author", second(validateAppendEvent(&servicev1.AppendEventRequest{AppName: "a", UserId: "u", SessionId: "s", Event: &agentrunnerv1.Event{Author: bad}})), "event.author"},
		{"save/filename", second(validateSaveArtifact(&servicev1.SaveArtifactRequest{AppName: "a", UserId: "u", SessionId: "s", Filename: bad})), "filename"},
		{"run/session", second(validateRunRequest(&servicev1.RunRequest{AppName: "a", UserId: "u", SessionId: bad, NewMessage: text("hi")})), "session_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.err, codes.InvalidArgument, tc.field)
		})
	}
}

func second[T any](_ T, err error) error { return err }

func TestValidateRunRequest(t *testing.T) {
	ok := func() *servicev1.RunRequest {
		return &servicev1.RunRequest{AppName: "app", UserId: "u", SessionId: "s", NewMessage: text("hi")}
	}
	tests := []struct {
		name   string
		modify func(*servicev1.RunRequest)
		field  string // "" means valid
	}{
		{"valid", func(*servicev1.RunRequest) {}, ""},
		{"no app", func(r *servicev1.RunRequest) { r.AppName = "" }, "app_name"},
		{"no user", func(r *servicev1.RunRequest) { r.UserId = "" }, "user_id"},
		{"no session", func(r *servicev1.RunRequest) { r.SessionId = "" }, "session_id"},
		{"long session", func(r *servicev1.RunRequest) { r.SessionId = strings.Repeat("s", 129) }, "session_id"},
		{"no message", func(r *servicev1.RunRequest) { r.NewMessage = nil }, "new_message"},
		{"no parts", func(r *servicev1.RunRequest) { r.NewMessage.Parts = nil }, "new_message.parts"},
		{"empty part", func(r *servicev1.RunRequest) {
			r.NewMessage.Parts = append(r.NewMessage.Parts, &agentrunnerv1.Part{})
		}, "new_message.parts[1]"},
		{"unknown multitask_strategy", func(r *servicev1.RunRequest) {
			r.MultitaskStrategy = 99
		}, "multitask_strategy"},
		{"unknown on_disconnect", func(r *servicev1.RunRequest) {
			r.OnDisconnect = 7
		}, "on_disconnect"},
		{"long request_id", func(r *servicev1.RunRequest) {
			r.RequestId = strings.Repeat("r", 129)
		}, "request_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ok()
			tc.modify(r)
			_, err := validateRunRequest(r)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("validateRunRequest: %v", err)
				}
				return
			}
			wantCode(t, err, codes.InvalidArgument, tc.field)
		})
	}
}

// FuzzValidateRunRequest checks that validation never panics, that what it
// accepts is a well-formed key, and that what it rejects is InvalidArgument
// naming a field.
func FuzzValidateRunRequest(f *testing.F) {
	f.Add("app", "user", "session", "hello", 1)
	f.Add("", "u", "s", "", 0)
	f.Add("a", "u\xff", strings.Repeat("s", 200), "x", 3)
	f.Fuzz(func(t *testing.T, app, user, session, msg string, parts int) {
		r := &servicev1.RunRequest{AppName: app, UserId: user, SessionId: session, NewMessage: &agentrunnerv1.Content{}}
		for i := range parts % 4 {
			p := &agentrunnerv1.Part{}
			if i%2 == 0 || msg != "" {
				p.Data = &agentrunnerv1.Part_Text{Text: msg}
			}
			r.NewMessage.Parts = append(r.NewMessage.Parts, p)
		}
		k, err := validateRunRequest(r)
		if err != nil {
			wantCode(t, err, codes.InvalidArgument, fieldOf(err))
			return
		}
		for _, id := range []string{k.App, k.User, k.Session} {
			if id == "" || len(id) > maxIDBytes || !utf8.ValidString(id) {
				t.Fatalf("accepted id %q", id)
			}
		}
		if len(r.NewMessage.GetParts()) == 0 {
			t.Fatal("accepted a message without parts")
		}
	})
}

// fieldOf returns the field an InvalidArgument message starts with.
func fieldOf(err error) string {
	msg := statusMessage(err)
	field, _, _ := strings.Cut(msg, ": ")
	return field
}
