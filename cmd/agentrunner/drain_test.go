package main

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// streamed is what one streaming client received of its run.
type streamed struct {
	runID  string
	events []*agentrunnerv1.Event // complete (stored) events, in order
	err    error                  // how the stream ended; nil for the final record
}

// TestSIGTERMDrainsStreamingRuns: a SIGTERM while 32 streaming runs are
// in tool calls (16 that end in 300ms, 16 that never end) drains: the
// process exits 0 soon after the drain timeout, the runs that could end
// ended SUCCEEDED, the others are INTERRUPTED, none is left RUNNING, and
// after a restart every event a client received is stored, at the
// sequence it came with.
func TestSIGTERMDrainsStreamingRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentrunner")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	config, marker := hangConfig(t, dir)
	data := filepath.Join(dir, "agentrunner.db")
	const drain = 3 * time.Second
	p := startBinary(t, bin, "--addr", "127.0.0.1:0", "--data", data, "--config", config, "--drain-timeout", drain.String())
	conn := dial(t, p.addr)
	rc, sc := servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn)
	const n = 32
	got := make([]streamed, n)
	var wg sync.WaitGroup
	for i := range n {
		session, tool := fmt.Sprintf("s%d", i), "hang"
		if i%2 == 0 {
			tool = "nap"
		}
		createSession(t, sc, "tools", session)
		stream, err := rc.Run(t.Context(), &servicev1.RunRequest{AppName: "tools", UserId: "u", SessionId: session, NewMessage: userText("call " + tool),
			RunConfig: &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				resp, err := stream.Recv()
				switch {
				case errors.Is(err, io.EOF):
					return
				case err != nil:
					got[i].err = err
					return
				case resp.GetRun() != nil:
					got[i].runID = resp.GetRun().GetRunId()
				case resp.GetEvent() != nil && !resp.GetEvent().GetPartial():
					got[i].events = append(got[i].events, resp.GetEvent())
				}
			}
		}()
	}
	waitForLines(t, marker, n) // every run is in its tool
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.logs)
		}
	case <-time.After(drain + 15*time.Second):
		t.Fatalf("no exit within %v of SIGTERM\n%s", drain+15*time.Second, p.logs)
	}
	t.Logf("exited %v after SIGTERM (drain timeout %v)", time.Since(sent).Round(time.Millisecond), drain)
	wg.Wait()

	p = startBinary(t, bin, "--addr", "127.0.0.1:0", "--data", data, "--config", config)
	conn = dial(t, p.addr)
	rc, sc = servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn)
	for i, g := range got {
		checkDrained(t, rc, sc, fmt.Sprintf("s%d", i), i%2 == 0, g)
	}
}

// checkDrained checks one run after the drain and the restart: its
// status, and that every complete event its client received is stored.
func checkDrained(t *testing.T, rc servicev1.RunnerServiceClient, sc servicev1.SessionServiceClient, session string, ends bool, g streamed) {
	t.Helper()
	if g.runID == "" {
		t.Fatalf("%s: no run record streamed (%v)", session, g.err)
	}
	want := agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED
	if ends {
		want = agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
	}
	if rec := getRecord(t, rc, g.runID); rec.GetStatus() != want {
		t.Errorf("%s: run %s is %v after the drain, want %v", session, g.runID, rec.GetStatus(), want)
	}
	stored, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "tools", UserId: "u", SessionId: session})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*agentrunnerv1.Event{}
	for _, ev := range stored.GetEvents() {
		byID[ev.GetId()] = ev
	}
	if len(g.events) == 0 {
		t.Errorf("%s: the client received no event", session)
	}
	for _, ev := range g.events {
		if s := byID[ev.GetId()]; s == nil || s.GetSequence() != ev.GetSequence() {
			t.Errorf("%s: received event %s (seq %d) is not stored after the restart", session, ev.GetId(), ev.GetSequence())
		}
	}
}
