package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/e2e"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// runsServer serves the default apps (demo, orders, support on the offline
// model), or the apps file config when it is not empty, in-process on the
// data file, until the test ends.
func runsServer(t *testing.T, data, config string) (string, servicev1.RunnerServiceClient, servicev1.SessionServiceClient) {
	t.Helper()
	addr, rc, sc, _ := stoppableRunsServer(t, data, config)
	return addr, rc, sc
}

// stoppableRunsServer is runsServer that can also be stopped early, as
// SIGTERM would: runs still going after the 100ms drain are interrupted.
func stoppableRunsServer(t *testing.T, data, config string) (string, servicev1.RunnerServiceClient, servicev1.SessionServiceClient, func()) {
	t.Helper()
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"} {
		t.Setenv(k, "")
	}
	t.Setenv(envConfig, config)
	ctx, cancel := context.WithCancel(context.Background())
	addr, exited, logs := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", data, "--drain-timeout", "100ms")
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-exited; err != nil {
			t.Errorf("serve: %v\n%s", err, logs)
		}
	})
	t.Cleanup(stop)
	conn := dial(t, addr)
	return addr, servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn), stop
}

// runsCLI runs `agentrunner runs SUB --addr addr ARGS...` and returns its
// stdout, stderr and exit status.
func runsCLI(t *testing.T, addr string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut strings.Builder
	err := run(t.Context(), append([]string{"runs", args[0], "--addr", addr}, args[1:]...), strings.NewReader(""), &out, &errOut)
	code = exitCode(err, &errOut) // it prints the error, as main does
	return out.String(), errOut.String(), code
}

// mustRunsCLI is runsCLI for a command that must succeed.
func mustRunsCLI(t *testing.T, addr string, args ...string) string {
	t.Helper()
	out, errOut, code := runsCLI(t, addr, args...)
	if code != 0 {
		t.Fatalf("runs %q exited %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
	}
	return out
}

// userText, createSession and runToEnd are e2e's, for the tests that
// stay here (user "u" in createSession).
func userText(s string) *agentrunnerv1.Content { return e2e.UserText(s) }

func createSession(t *testing.T, sc servicev1.SessionServiceClient, app, session string) {
	t.Helper()
	e2e.CreateSession(t, sc, app, "u", session)
}

func runToEnd(t *testing.T, rc servicev1.RunnerServiceClient, req *servicev1.RunRequest) *agentrunnerv1.Run {
	t.Helper()
	return e2e.RunToEnd(t, rc, req)
}

// TestRunsResumeAnswersAClientTool: a run of the orders app waits on its
// client-executed get_order; get, list and attach show what it waits on,
// and resume --answer answers it under the tool's name, so the model
// reads whose result it is.
// TestRunsResumeAnswersAClientTool runs on both stores: a run waiting on
// the caller's tool is what the tool-call ledger and run records serve.
func TestRunsResumeAnswersAClientTool(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) { testResumeAnswersAClientTool(t, filepath.Join(t.TempDir(), "a.db")) })
	t.Run("postgres", func(t *testing.T) { testResumeAnswersAClientTool(t, pg.URL(t)) })
}

func testResumeAnswersAClientTool(t *testing.T, data string) {
	addr, rc, sc := runsServer(t, data, "")
	createSession(t, sc, "orders", "s")
	rec := runToEnd(t, rc, &servicev1.RunRequest{AppName: "orders", UserId: "u", SessionId: "s", NewMessage: userText(`call get_order {"order_id":"42"}`)})
	id := rec.GetRunId()
	if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED || len(rec.GetPendingCallIds()) != 1 {
		t.Fatalf("run ended %v; want INPUT_REQUIRED on one call", rec)
	}
	call := rec.GetPendingCallIds()[0]

	if out := mustRunsCLI(t, addr, "get", id); !strings.Contains(out, "status:         INPUT_REQUIRED\n") || !strings.Contains(out, "waiting on:     "+call+"\n") {
		t.Errorf("runs get:\n%s", out)
	}
	out := mustRunsCLI(t, addr, "list", "--app", "orders", "--user", "u", "--session", "s")
	if row := rowOf(t, out, id); !strings.Contains(row, " INPUT_REQUIRED ") || !strings.HasSuffix(row, " "+call) {
		t.Errorf("runs list row %q; want INPUT_REQUIRED and %s", row, call)
	}
	// Waiting on the caller is how such a run ends well: exit 0.
	out = mustRunsCLI(t, addr, "attach", id)
	if !strings.Contains(out, `-> clerk calls get_order({"order_id":"42"}) (`+call+", waits for the caller)") ||
		!strings.Contains(out, "  waiting on get_order "+call+"\n") {
		t.Errorf("runs attach:\n%s", out)
	}

	out = mustRunsCLI(t, addr, "resume", id, "--answer", call+`={"status": "shipped"}`)
	if !strings.Contains(out, `[clerk] offline model: get_order returned {"status":"shipped"}`) || !strings.Contains(out, "run "+id+" SUCCEEDED") {
		t.Errorf("runs resume --answer:\n%s", out)
	}
	got, err := rc.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: id})
	if err != nil || got.GetRun().GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || len(got.GetRun().GetPendingCallIds()) != 0 {
		t.Fatalf("GetRun after the answer: %v, %v", got, err)
	}

	// An ended run cannot be resumed: the server's message, exit 1.
	out, errOut, code := runsCLI(t, addr, "resume", id)
	if code != 1 || !strings.Contains(errOut, "agentrunner: FailedPrecondition: ") || !strings.Contains(errOut, "SUCCEEDED") {
		t.Errorf("runs resume of a finished run = %d\n%s\n%s", code, out, errOut)
	}

	// A waiting run whose session moved on (a later, plain message) was
	// superseded: it ended CANCELLED, and ResumeRun no longer takes it.
	createSession(t, sc, "orders", "later")
	stale := runToEnd(t, rc, &servicev1.RunRequest{AppName: "orders", UserId: "u", SessionId: "later", NewMessage: userText(`call get_order {"order_id":"7"}`)})
	if stale.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
		t.Fatalf("run ended %v; want INPUT_REQUIRED", stale)
	}
	runToEnd(t, rc, &servicev1.RunRequest{AppName: "orders", UserId: "u", SessionId: "later", NewMessage: userText("never mind")})
	out, errOut, code = runsCLI(t, addr, "resume", stale.GetRunId(), "--answer", stale.GetPendingCallIds()[0]+`={"status": "lost"}`)
	if code != 1 || !strings.Contains(errOut, "agentrunner: FailedPrecondition: ") || !strings.Contains(errOut, "RUN_STATUS_CANCELLED") {
		t.Errorf("runs resume of a run the session moved past = %d\n%s\n%s", code, out, errOut)
	}
}

// hangConfig writes an apps file whose app "tools" has an MCP tool, hang,
// that never ends on its own (the test binary serves it, see TestMain);
// each start of it adds a line to the returned marker file.
func hangConfig(t *testing.T, dir string) (config, marker string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker = filepath.Join(dir, "started")
	config = filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `
apps:
  - name: tools
    mcp_servers: [{ name: slow, command: %q, env: ["%s=%s"] }]
    root_agent: { name: worker, llm: { model: offline, mcp: [{ server: slow }] } }
`, exe, mcpHangEnv, marker), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, marker
}

// startHang starts a run that calls hang and returns its id once the tool
// is running.
func startHang(t *testing.T, rc servicev1.RunnerServiceClient, sc servicev1.SessionServiceClient, marker string) string {
	t.Helper()
	createSession(t, sc, "tools", "s")
	started, err := rc.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "tools", UserId: "u", SessionId: "s", NewMessage: userText("call hang")})
	if err != nil {
		t.Fatal(err)
	}
	waitForLines(t, marker, 1)
	return started.GetRun().GetRunId()
}

// TestRunsCancel cancels a run blocked in a tool: cancel prints CANCELLED
// once it took effect, an attached reader sees the end and exits 1, and
// get shows the record.
func TestRunsCancel(t *testing.T) {
	dir := t.TempDir()
	config, marker := hangConfig(t, dir)
	addr, rc, sc := runsServer(t, filepath.Join(dir, "a.db"), config)
	id := startHang(t, rc, sc, marker)

	type result struct {
		out, errOut string
		code        int
	}
	attached := make(chan result, 1)
	go func() {
		var out, errOut strings.Builder
		err := run(context.Background(), []string{"runs", "attach", "--addr", addr, id}, nil, &out, &errOut)
		code := exitCode(err, &errOut)
		attached <- result{out.String(), errOut.String(), code}
	}()
	if out := mustRunsCLI(t, addr, "cancel", id); out != "run "+id+" CANCELLED\n" {
		t.Errorf("runs cancel printed %q; want the run CANCELLED", out)
	}
	select {
	case a := <-attached:
		if a.code != 1 || !strings.Contains(a.out, "-> worker calls hang({})") || !strings.Contains(a.out, "run "+id+" CANCELLED") ||
			!strings.Contains(a.errOut, "agentrunner: run "+id+" ended CANCELLED: Canceled: ") {
			t.Errorf("runs attach of the cancelled run = %d\n%s\n%s", a.code, a.out, a.errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("runs attach did not end within 30s of the cancellation")
	}
	out := mustRunsCLI(t, addr, "get", id)
	if !strings.Contains(out, "status:         CANCELLED\n") || !strings.Contains(out, "error:          Canceled: ") {
		t.Errorf("runs get of the cancelled run:\n%s", out)
	}
	// Cancelling an ended run changes nothing.
	if out := mustRunsCLI(t, addr, "cancel", id); out != "run "+id+" CANCELLED\n" {
		t.Errorf("second runs cancel printed %q", out)
	}
}

// TestRunsCommandLine: command lines that cannot work exit 2 before any
// call; a run the server does not know exits 1 with its message; -h
// shows every subcommand.
func TestRunsCommandLine(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
		code int
	}{
		{"no subcommand", []string{"runs"}, "unknown command \"--addr=127.0.0.1:1\"", 2},
		{"unknown subcommand", []string{"runs", "show", "x"}, `unknown command "show"`, 2},
		{"get without an id", []string{"runs", "get"}, "want one RUN_ID argument, got 0", 2},
		{"get with two ids", []string{"runs", "get", "a", "b"}, "want one RUN_ID argument, got 2", 2},
		{"list without a session", []string{"runs", "list"}, "--session is required", 2},
		{"list with an id", []string{"runs", "list", "--session", "s", "e-x"}, "takes no arguments", 2},
		{"a flag of another subcommand", []string{"runs", "get", "e-x", "--after", "3"}, "runs get does not take --after", 2},
		{"answer without an id", []string{"runs", "resume", "e-x", "--answer", `{"a":1}`}, "want CALL_ID=JSON", 2},
		{"answer that is not an object", []string{"runs", "resume", "e-x", "--answer", "call-1=[1]"}, "must be a JSON object", 2},
		{"token without a page size", []string{"runs", "list", "--session", "s", "--page-token", "t"}, "--page-token goes with --page-size", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A server nobody listens on: none of these may get as far.
			err := run(t.Context(), append(tc.args, "--addr=127.0.0.1:1"), nil, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one mentioning %q", err, tc.want)
			}
			if code := exitCode(err, io.Discard); code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
		})
	}

	t.Run("help", func(t *testing.T) {
		var stderr strings.Builder
		err := run(t.Context(), []string{"help", "runs"}, nil, io.Discard, &stderr)
		if !errors.Is(err, flag.ErrHelp) || exitCode(err, io.Discard) != 0 {
			t.Fatalf("help runs = %v", err)
		}
		for _, want := range []string{"runs list", "runs get", "runs cancel", "runs attach", "runs resume", "-answer", envAddr} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("help runs lacks %q:\n%s", want, stderr.String())
			}
		}
	})

	t.Run("unknown run", func(t *testing.T) {
		addr, _, _ := runsServer(t, filepath.Join(t.TempDir(), "a.db"), "")
		for _, sub := range []string{"get", "cancel", "attach", "resume"} {
			out, errOut, code := runsCLI(t, addr, sub, "e-NOPE")
			if code != 1 || out != "" || !strings.Contains(errOut, "agentrunner: NotFound: ") {
				t.Errorf("runs %s of an unknown run = %d, stdout %q, stderr %q; want 1 and NotFound", sub, code, out, errOut)
			}
		}
	})
}

// TestRunsResumeInterrupted: a shutdown interrupts a run blocked in a
// tool; after the restart get shows it INTERRUPTED, resume stops at the
// call left in doubt (nothing runs it again silently), and resume
// --answer settles it so the run ends.
func TestRunsResumeInterrupted(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) { testResumeInterrupted(t, "") })
	t.Run("postgres", func(t *testing.T) { testResumeInterrupted(t, pg.URL(t)) })
}

// testResumeInterrupted is TestRunsResumeInterrupted on the store at
// data, or on a bbolt file when data is empty.
func testResumeInterrupted(t *testing.T, data string) {
	dir := t.TempDir()
	config, marker := hangConfig(t, dir)
	if data == "" {
		data = filepath.Join(dir, "a.db")
	}
	_, rc, sc, stop := stoppableRunsServer(t, data, config)
	id := startHang(t, rc, sc, marker)
	stop()

	addr, rc, sc, stop2 := stoppableRunsServer(t, data, config)
	out := mustRunsCLI(t, addr, "get", id)
	if !strings.Contains(out, "status:         INTERRUPTED\n") || !strings.Contains(out, "error:          Unavailable: ") {
		t.Errorf("runs get of the interrupted run:\n%s", out)
	}
	ledger, err := sc.ListToolCalls(t.Context(), &servicev1.ListToolCallsRequest{AppName: "tools", UserId: "u", SessionId: "s"})
	if err != nil || len(ledger.GetToolCalls()) != 1 {
		t.Fatalf("ListToolCalls = %v, %v; want the hang call", ledger, err)
	}
	call := ledger.GetToolCalls()[0].GetCallId()

	// Attach shows the interruption; resume without answers stops at the
	// call in doubt, and exits 0: the run waits on its caller.
	out, _, code := runsCLI(t, addr, "attach", id)
	if code != 1 || !strings.Contains(out, "run "+id+" INTERRUPTED") {
		t.Errorf("runs attach of the interrupted run = %d\n%s", code, out)
	}
	out = mustRunsCLI(t, addr, "resume", id)
	if !strings.Contains(out, "run "+id+" INPUT_REQUIRED") || !strings.Contains(out, "waiting on hang "+call+", left in doubt") || !strings.Contains(out, "--retry CALL_ID") {
		t.Errorf("runs resume of the interrupted run:\n%s", out)
	}

	// --retry runs the call again; a second shutdown interrupts it again,
	// and the resuming command sees that and exits 1.
	addr, rc = retryUntilShutdown(t, addr, id, call, data, config, marker, stop2)
	out = mustRunsCLI(t, addr, "resume", id, "--answer", call+`={"done": true}`)
	if !strings.Contains(out, `[worker] offline model: hang returned {"done":true}`) || !strings.Contains(out, "run "+id+" SUCCEEDED") {
		t.Errorf("runs resume --answer of the call in doubt:\n%s", out)
	}
	if n := countLines(t, marker); n != 2 {
		t.Errorf("the tool started %d times; want 2 (the first run, the retry), the answer standing in for a third", n)
	}
	if got, err := rc.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: id}); err != nil || got.GetRun().GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("GetRun after the answer: %v, %v", got, err)
	}
}

// retryUntilShutdown resumes the run retrying its call in doubt, stops the
// server while the call runs again, checks what the resuming command
// printed, and restarts the server.
func retryUntilShutdown(t *testing.T, addr, id, call, data, config, marker string, stop func()) (string, servicev1.RunnerServiceClient) {
	t.Helper()
	type result struct {
		out  string
		code int
	}
	resumed := make(chan result, 1)
	go func() {
		var out strings.Builder
		err := run(context.Background(), []string{"runs", "resume", "--addr", addr, id, "--retry", call}, nil, &out, io.Discard)
		resumed <- result{out.String(), exitCode(err, io.Discard)}
	}()
	waitForLines(t, marker, 2)
	stop()
	select {
	case r := <-resumed:
		if r.code != 1 || !strings.Contains(r.out, "run "+id+" INTERRUPTED") {
			t.Errorf("runs resume --retry through a shutdown = %d\n%s", r.code, r.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("runs resume --retry did not end within 30s of the shutdown")
	}
	addr, rc, _ := runsServer(t, data, config)
	return addr, rc
}
