package front

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// validators are the request checks the fuzzer drives, each decoding the
// fuzzer's bytes as its request.
var validators = []func(b []byte) (store.SessionKey, bool, error){
	keyedCheck(func(r *servicev1.CreateSessionRequest) (store.SessionKey, error) {
		k, err := validateCreateSession(r)
		if k.Session == "" {
			k.Session = "-" // empty asks the store for a random id
		}
		return k, err
	}),
	keyedCheck(validateGetSession),
	keyedCheck(validateAppendEvent),
	keyedCheck(validateListEvents),
	keyedCheck(userScoped(validateSaveArtifact)),
	keyedCheck(userScoped(validateLoadArtifact)),
	keyedCheck(func(r *servicev1.ListArtifactsRequest) (store.SessionKey, error) {
		k, err := validateListArtifacts(r)
		if k.Session == "" {
			k.Session = "-" // empty lists the user's user: artifacts
		}
		return k, err
	}),
	keyedCheck(userScoped(validateListArtifactVersions)),
	keyedCheck(userScoped(validateDeleteArtifact)),
	keyedCheck(validateRunRequest),
	unkeyedCheck(validateListSessions),
	unkeyedCheck(validateResumeRun),
}

// userScoped accepts an empty session id where the contract does: for a
// user: artifact, which belongs to the user, not to a session. Any other
// artifact accepted without a session fails the fuzz target.
func userScoped[P interface{ GetFilename() string }](check func(P) (store.SessionKey, error)) func(P) (store.SessionKey, error) {
	return func(r P) (store.SessionKey, error) {
		k, err := check(r)
		if k.Session == "" && strings.HasPrefix(r.GetFilename(), "user:") {
			k.Session = "-"
		}
		return k, err
	}
}

func keyedCheck[R any, P interface {
	*R
	proto.Message
}](check func(P) (store.SessionKey, error)) func([]byte) (store.SessionKey, bool, error) {
	return func(b []byte) (store.SessionKey, bool, error) {
		r := P(new(R))
		if proto.Unmarshal(b, r) != nil {
			return store.SessionKey{}, false, nil
		}
		k, err := check(r)
		return k, true, err
	}
}

func unkeyedCheck[R any, P interface {
	*R
	proto.Message
}](check func(P) error) func([]byte) (store.SessionKey, bool, error) {
	return func(b []byte) (store.SessionKey, bool, error) {
		r := P(new(R))
		if proto.Unmarshal(b, r) != nil {
			return store.SessionKey{}, false, nil
		}
		return store.SessionKey{App: "-", User: "-", Session: "-"}, true, check(r)
	}
}

// FuzzValidateRequests decodes arbitrary bytes as each kind of request and
// validates it. A refusal must be InvalidArgument whose message starts
// with the field its BadRequest detail names; what passes must address a
// session by ids the store can key and the logs can print.
func FuzzValidateRequests(f *testing.F) {
	run, _ := proto.Marshal(&servicev1.RunRequest{AppName: "a", UserId: "u", SessionId: "s", NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "hi"}}}}})
	f.Add(uint8(9), run)
	f.Add(uint8(2), []byte{0x0a, 0x01, 'a', 0x12, 0x01, 'u', 0x1a, 0x02, 's', 0x1b})
	f.Add(uint8(0), []byte{})
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		k, decoded, err := validators[int(which)%len(validators)](b)
		if !decoded {
			return
		}
		if err != nil {
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument {
				t.Fatalf("refused with %v: %s", st.Code(), st.Message())
			}
			for _, d := range st.Details() {
				if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 && !strings.HasPrefix(st.Message(), br.GetFieldViolations()[0].GetField()+": ") {
					t.Fatalf("message %q does not start with the field %q", st.Message(), br.GetFieldViolations()[0].GetField())
				}
			}
			return
		}
		for _, id := range []string{k.App, k.User, k.Session} {
			if id == "" || len(id) > maxIDBytes || !utf8.ValidString(id) || strings.ContainsFunc(id, unicode.IsControl) {
				t.Fatalf("accepted the id %q", id)
			}
		}
	})
}
