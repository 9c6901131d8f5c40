package chat_test

import (
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/chat"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestSessionsForkAndRewind: "sessions fork" copies a session up to an
// event, "sessions rewind" takes one back to before a run, and "sessions
// show" names a fork's source and shows the rewind.
func TestSessionsForkAndRewind(t *testing.T) {
	addr, _ := startServer(t)
	run := func(args ...string) (string, error) {
		t.Helper()
		var out, errOut syncBuffer
		err := chat.Sessions(t.Context(), append(args[:1:1], append([]string{"--addr", addr, "--app", "demo", "--user", "fay"}, args[1:]...)...), &out, &errOut)
		return out.String(), err
	}
	c := startChat(t, "--addr", addr, "--app", "demo", "--user", "fay", "--session", "s1", "--no-stream")
	c.typeLine("hi")
	c.expect(`\(events #1-#8\)\n`)
	c.typeLine("/quit")
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
	out, err := run("fork", "--at", "2", "--new-id", "s1b", "s1")
	if err != nil || !strings.HasPrefix(out, "forked session s1b (user fay) from s1 at event 2: 2 events") {
		t.Fatalf("sessions fork: %q, %v", out, err)
	}
	if out, err = run("show", "s1b"); err != nil || !strings.Contains(out, "forked from session s1 (user fay) at event 2") || strings.Contains(out, "#3 ") {
		t.Fatalf("sessions show of the fork: %q, %v", out, err)
	}
	if out, err = run("fork", "s1"); err != nil || !strings.Contains(out, "at event 8: 8 events") {
		t.Fatalf("sessions fork without --at (the whole session): %q, %v", out, err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	runs, err := servicev1.NewRunnerServiceClient(conn).ListRuns(t.Context(), &servicev1.ListRunsRequest{AppName: "demo", UserId: "fay", SessionId: "s1"})
	if err != nil || len(runs.GetRuns()) != 1 {
		t.Fatalf("runs of s1: %v, %v", runs, err)
	}
	id := runs.GetRuns()[0].GetRunId()
	if out, err = run("rewind", "--before", id, "s1"); err != nil || !strings.HasPrefix(out, "rewound session s1 to before run "+id+": event #9") {
		t.Fatalf("sessions rewind: %q, %v", out, err)
	}
	if out, err = run("show", "--events", "1", "s1"); err != nil || !strings.Contains(out, "#9 [user] rewound to before run "+id) {
		t.Fatalf("sessions show after the rewind: %q, %v", out, err)
	}
	if _, err = run("rewind", "--before", "e-nope", "s1"); err == nil || !strings.HasPrefix(err.Error(), "NotFound: ") {
		t.Errorf("rewind before a run the session does not hold: %v, want NotFound", err)
	}
}
