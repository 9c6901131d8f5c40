package front

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// wantCode checks err's code and, for InvalidArgument, that the message and
// the BadRequest detail name field.
func wantCode(t *testing.T, err error, code codes.Code, field string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("code = %v (%q), want %v", st.Code(), st.Message(), code)
	}
	if field == "" {
		return
	}
	if !strings.HasPrefix(st.Message(), field+": ") {
		t.Errorf("message %q does not start with the field %q", st.Message(), field)
	}
	var got []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				got = append(got, v.GetField())
			}
		}
	}
	if len(got) != 1 || got[0] != field {
		t.Errorf("BadRequest field violations = %q, want [%q]", got, field)
	}
}

// syncBuffer is a bytes.Buffer safe to log into from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func text(s string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}
}

func statusMessage(err error) string { return status.Convert(err).Message() }
