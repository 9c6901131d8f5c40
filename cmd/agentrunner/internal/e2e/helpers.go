package e2e

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// UserText is a user's message of one text part.
func UserText(s string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}
}

// CreateSession creates session app/user/id.
func CreateSession(t *testing.T, sc servicev1.SessionServiceClient, app, user, id string) {
	t.Helper()
	if _, err := sc.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: app, UserId: user, SessionId: id}); err != nil {
		t.Fatal(err)
	}
}

// RunToEnd runs req over Run and returns the stream's last record,
// checking that the first one is the same run.
func RunToEnd(t *testing.T, rc servicev1.RunnerServiceClient, req *servicev1.RunRequest) *agentrunnerv1.Run {
	t.Helper()
	stream, err := rc.Run(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	var first, last *agentrunnerv1.Run
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if r := resp.GetRun(); r != nil {
			if first == nil {
				first = r
			}
			last = r
		}
	}
	if first == nil || last == first || first.GetRunId() != last.GetRunId() {
		t.Fatalf("Run stream records: first %v, last %v; want two of the same run", first, last)
	}
	return last
}

// RunOnce runs req to its end and returns the error that ended the
// stream, nil if none.
func RunOnce(t *testing.T, rc servicev1.RunnerServiceClient, req *servicev1.RunRequest) error {
	stream, err := rc.Run(t.Context(), req)
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// WriteFile writes content to name in a new temp dir of t's and returns
// its path.
func WriteFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
