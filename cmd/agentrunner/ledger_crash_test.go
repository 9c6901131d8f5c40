package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/mcpdemo"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store/pgstore/pgtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpHangEnv makes the test binary an MCP server on stdio whose only tool,
// hang, writes a line to the file the variable names and then never
// answers: a tool still running when the server is killed.
const mcpHangEnv = "AGENTRUNNER_TEST_MCP_HANG"

func TestMain(m *testing.M) {
	// The default apps run this executable as `agentrunner mcp-demo`; in
	// tests that is the test binary, which must then be that server too.
	if len(os.Args) > 1 && os.Args[1] == "mcp-demo" {
		if err := mcpdemo.Main(context.Background(), nil, os.Stderr); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if marker := os.Getenv(mcpHangEnv); marker != "" {
		s := mcp.NewServer(&mcp.Implementation{Name: "hang", Version: "v0"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Starts and never ends."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			f, err := os.OpenFile(marker, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				fmt.Fprintln(f, "started")
				f.Close()
			}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
		// nap is a tool that takes a moment and ends: a run still going
		// when a drain starts, that the drain lets finish.
		mcp.AddTool(s, &mcp.Tool{Name: "nap", Description: "Works 300ms, then answers."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			f, err := os.OpenFile(marker, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				fmt.Fprintln(f, "started")
				f.Close()
			}
			select {
			case <-time.After(300 * time.Millisecond):
				return nil, map[string]any{"rested": true}, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
		_ = s.Run(context.Background(), &mcp.StdioTransport{})
		os.Exit(0)
	}
	os.Exit(pgtest.Main(m, &pg))
}

// TestKill9WhileRunsRun kills the server while 48 runs wait in an MCP
// tool and 16 have ended: after a restart no run is left RUNNING (the
// ended ones are SUCCEEDED, or INTERRUPTED when the kill beat their lazily
// written final record), the ledger shows each call started and not
// finished, nothing ran a tool again, and ResumeRun settles every run:
// the call in doubt waits for its caller, whose answer ends the run.
func TestKill9WhileRunsRun(t *testing.T) {
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
	p := startBinary(t, bin, "--addr", "127.0.0.1:0", "--data", data, "--config", config)
	conn := dial(t, p.addr)
	rc, sc := servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn)
	const hanging, finished = 48, 16
	var ended, waiting []string
	for i := range finished {
		session := fmt.Sprintf("f%d", i)
		createSession(t, sc, "tools", session)
		rec := runToEnd(t, rc, &servicev1.RunRequest{AppName: "tools", UserId: "u", SessionId: session, NewMessage: userText("hello")})
		ended = append(ended, rec.GetRunId())
	}
	for i := range hanging {
		session := fmt.Sprintf("h%d", i)
		createSession(t, sc, "tools", session)
		started, err := rc.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "tools", UserId: "u", SessionId: session, NewMessage: userText("call hang")})
		if err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, started.GetRun().GetRunId())
	}
	waitForLines(t, marker, hanging)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited

	p = startBinary(t, bin, "--addr", "127.0.0.1:0", "--data", data, "--config", config)
	conn = dial(t, p.addr)
	rc, sc = servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn)
	for _, id := range ended {
		rec := getRecord(t, rc, id)
		switch rec.GetStatus() {
		case agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED:
		case agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED:
			// Its answer is stored: resuming finds nothing left to do.
			if got := resumeToEnd(t, rc, &servicev1.ResumeRunRequest{RunId: id}); got.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || got.GetLastSequence() != rec.GetLastSequence() {
				t.Errorf("resumed ended run %v, want SUCCEEDED with no new event (was %v)", got, rec)
			}
		default:
			t.Errorf("run %s that ended before the kill is %v after it", id, rec.GetStatus())
		}
	}
	for i, id := range waiting {
		settleInDoubt(t, rc, sc, fmt.Sprintf("h%d", i), id)
	}
	if n := countLines(t, marker); n != hanging {
		t.Fatalf("the tool started %d times; want %d, once per run", n, hanging)
	}
}

// settleInDoubt checks a run the kill cut off in its hang call and
// settles it: resume stops at the call in doubt, the answer ends the run.
func settleInDoubt(t *testing.T, rc servicev1.RunnerServiceClient, sc servicev1.SessionServiceClient, session, id string) {
	t.Helper()
	if rec := getRecord(t, rc, id); rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED {
		t.Fatalf("run %s cut off in a tool is %v after the restart, want INTERRUPTED", id, rec.GetStatus())
	}
	ledger, err := sc.ListToolCalls(t.Context(), &servicev1.ListToolCallsRequest{AppName: "tools", UserId: "u", SessionId: session})
	if err != nil {
		t.Fatal(err)
	}
	calls := ledger.GetToolCalls()
	if len(calls) != 1 || calls[0].GetTool() != "hang" || calls[0].GetCallSequence() == 0 || calls[0].GetResponseSequence() != 0 {
		t.Fatalf("ledger of %s after restart %v; want hang started and not finished", session, calls)
	}
	call := calls[0].GetCallId()
	rec := resumeToEnd(t, rc, &servicev1.ResumeRunRequest{RunId: id})
	if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED || len(rec.GetPendingCallIds()) != 1 || rec.GetPendingCallIds()[0] != call {
		t.Fatalf("resume of %s = %v; want INPUT_REQUIRED on %s", id, rec, call)
	}
	answer := &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: call, Name: "hang"}}}}}
	if rec := resumeToEnd(t, rc, &servicev1.ResumeRunRequest{RunId: id, Answers: answer}); rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("answered %s = %v; want SUCCEEDED", id, rec)
	}
}

func getRecord(t *testing.T, rc servicev1.RunnerServiceClient, id string) *agentrunnerv1.Run {
	t.Helper()
	resp, err := rc.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: id})
	if err != nil {
		t.Fatalf("GetRun(%s): %v", id, err)
	}
	return resp.GetRun()
}

// resumeToEnd resumes a run and returns the stream's last record.
func resumeToEnd(t *testing.T, rc servicev1.RunnerServiceClient, req *servicev1.ResumeRunRequest) *agentrunnerv1.Run {
	t.Helper()
	stream, err := rc.ResumeRun(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	var last *agentrunnerv1.Run
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return last
		}
		if err != nil {
			t.Fatalf("ResumeRun(%s): %v", req.GetRunId(), err)
		}
		if r := resp.GetRun(); r != nil {
			last = r
		}
	}
}

// waitForLines waits, boundedly, until the file has n lines.
func waitForLines(t *testing.T, path string, n int) {
	t.Helper()
	for range 200 {
		if countLines(t, path) >= n {
			return
		}
		time.Sleep(50 * time.Millisecond) // polling a file another process writes
	}
	t.Fatalf("%s never had %d lines", path, n)
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
