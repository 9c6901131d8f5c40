package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/demo"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// addrLine matches the log line serve writes once it is listening.
var addrLine = regexp.MustCompile(`msg=serving addr=(\S+)`)

// logWatcher reads a server's log stream, remembers every line and hands
// out the bound address once it appears.
type logWatcher struct {
	addr chan string
	mu   sync.Mutex
	text strings.Builder
	done chan struct{}
}

func watchLogs(r io.Reader) *logWatcher {
	w := &logWatcher{addr: make(chan string, 1), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(r)
		sent := false
		for sc.Scan() {
			w.mu.Lock()
			w.text.WriteString(sc.Text() + "\n")
			w.mu.Unlock()
			if m := addrLine.FindStringSubmatch(sc.Text()); m != nil && !sent {
				w.addr <- m[1]
				sent = true
			}
		}
		// Keep draining after an error, so the writer never blocks.
		io.Copy(io.Discard, r)
	}()
	return w
}

func (w *logWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.text.String()
}

// waitFor reports whether the log holds want within a bound. The server
// writes a request's access line after it answered, and the lines reach
// the watcher through a pipe, so a test that just got its answer waits
// for the line rather than reading the log at once.
func (w *logWatcher) waitFor(want string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		if strings.Contains(w.String(), want) {
			return true
		}
		select {
		case <-w.done:
			return strings.Contains(w.String(), want)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// waitAddr returns the bound address, failing if it does not appear within
// a bound or if the server ends first.
func (w *logWatcher) waitAddr(t *testing.T, exited <-chan error) string {
	t.Helper()
	select {
	case a := <-w.addr:
		return a
	case err := <-exited:
		t.Fatalf("server exited before serving: %v\n%s", err, w)
	case <-time.After(60 * time.Second):
		t.Fatalf("no address logged within 60s:\n%s", w)
	}
	return ""
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func checkServing(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	hc := healthpb.NewHealthClient(conn)
	for _, svc := range append([]string{""}, server.ServiceNames()...) {
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health of %q = %v, %v; want SERVING", svc, resp, err)
		}
	}
}

// noConsole starts a serve command line with the HTTP listener off: its
// default port, 8080, is one for the whole machine, so parallel tests
// (and anything else on 8080) would collide on it. A test that wants the
// listener gives --http-addr itself, after this; the last one wins.
func noConsole() []string { return []string{"serve", "--http-addr", ""} }

// startRun runs `serve args...` in-process and returns the bound address and
// a channel with run's result.
func startRun(t *testing.T, ctx context.Context, args ...string) (string, <-chan error, *logWatcher) {
	t.Helper()
	pr, pw := io.Pipe()
	logs := watchLogs(pr)
	exited := make(chan error, 1)
	go func() {
		err := run(ctx, append(noConsole(), args...), strings.NewReader(""), io.Discard, pw)
		pw.Close()
		exited <- err
	}()
	return logs.waitAddr(t, exited), exited, logs
}

func TestServe(t *testing.T) {
	// The default apps must not reach a real model from a developer's shell.
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"} {
		t.Setenv(k, "")
	}
	data := filepath.Join(t.TempDir(), "sub", "dir", "agentrunner.db")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, exited, logs := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", data)
	if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Fatalf("logged address %q is not the bound loopback port", addr)
	}

	conn := dial(t, addr)
	checkServing(t, conn)
	sessions := servicev1.NewSessionServiceClient(conn)
	if _, err := sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "a", UserId: "u", SessionId: "s"}); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}

	// The demo app and the default config's LLM app are served by
	// default, and run; without credentials the LLM app answers with the
	// offline model.
	runnerClient := servicev1.NewRunnerServiceClient(conn)
	apps, err := runnerClient.ListApps(t.Context(), &servicev1.ListAppsRequest{})
	if err != nil || len(apps.GetApps()) != 4 || apps.GetApps()[0].GetName() != demo.Name || apps.GetApps()[1].GetName() != "orders" ||
		apps.GetApps()[2].GetName() != "slow" || apps.GetApps()[3].GetName() != "support" {
		t.Fatalf("ListApps = %v, %v; want the demo, orders, slow and support apps", apps, err)
	}
	if m := apps.GetApps()[3].GetRootAgent().GetModel(); !strings.HasPrefix(m, "offline") {
		t.Fatalf("support runs on %q without credentials; want the offline model", m)
	}
	if _, err := sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "support", UserId: "u", SessionId: "s"}); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	if n := countRun(t, runnerClient, "support", "hello"); n < 1 {
		t.Errorf("the support run streamed %d events", n)
	}
	if _, err := sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: demo.Name, UserId: "u", SessionId: "s"}); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	if n := countRun(t, runnerClient, demo.Name, "hello"); n < 5 {
		t.Errorf("the demo run streamed %d events", n)
	}

	cancel()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("run returned %v after cancellation, want nil\n%s", err, logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not return within 30s of cancellation\n%s", logs)
	}
	<-logs.done
	for _, want := range []string{"shutting down", "stopped"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}

	// The store was closed: a second server opens the same file at once
	// (bbolt's file lock would make it time out otherwise) and sees the
	// session.
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	addr2, exited2, _ := startRun(t, ctx2, "--addr", "127.0.0.1:0", "--data", data)
	got, err := servicev1.NewSessionServiceClient(dial(t, addr2)).GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "a", UserId: "u", SessionId: "s"})
	if err != nil || got.GetSession().GetSessionId() != "s" {
		t.Fatalf("GetSession after restart: %v, %v", got, err)
	}
	cancel2()
	if err := <-exited2; err != nil {
		t.Fatal(err)
	}
}

// countRun runs msg on session u/s of app and returns how many events
// the stream carried, failing on an in-band or final error.
func countRun(t *testing.T, c servicev1.RunnerServiceClient, app, msg string) int {
	t.Helper()
	stream, err := c.Run(t.Context(), &servicev1.RunRequest{AppName: app, UserId: "u", SessionId: "s",
		NewMessage: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: msg}}}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if resp.GetError() != nil {
			t.Fatalf("Run: in-band error %v", resp.GetError())
		}
		if resp.GetEvent() != nil {
			n++
		}
	}
}

// testConfig is an apps file with one LLM app on the offline model.
const testConfig = `apps:
  - name: helpdesk
    description: Answers questions.
    root_agent:
      name: answer
      llm:
        model: offline
        instruction: Answer briefly.
`

func TestServeConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(cfg, []byte(testConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, exited, _ := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "a.db"), "--config", cfg)
	conn := dial(t, addr)
	rc := servicev1.NewRunnerServiceClient(conn)
	apps, err := rc.ListApps(t.Context(), &servicev1.ListAppsRequest{})
	if err != nil || len(apps.GetApps()) != 1 || apps.GetApps()[0].GetName() != "helpdesk" {
		t.Fatalf("ListApps = %v, %v; want only helpdesk", apps, err)
	}
	if _, err := servicev1.NewSessionServiceClient(conn).CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "helpdesk", UserId: "u", SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	if n := countRun(t, rc, "helpdesk", "hi"); n != 1 {
		t.Errorf("helpdesk run streamed %d events, want 1 answer", n)
	}
	cancel()
	if err := <-exited; err != nil {
		t.Fatal(err)
	}
}

func TestServeEnvFallbacks(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envData, filepath.Join(dir, "from-env.db"))
	t.Setenv(envAddr, "127.0.0.1:0")
	t.Setenv(envConfig, "")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, exited, _ := startRun(t, ctx)
	checkServing(t, dial(t, addr))
	if _, err := os.Stat(filepath.Join(dir, "from-env.db")); err != nil {
		t.Errorf("%s was not used: %v", envData, err)
	}
	cancel()
	if err := <-exited; err != nil {
		t.Fatal(err)
	}

	// A flag wins over its variable: this address could not be bound.
	t.Setenv(envAddr, "256.0.0.1:1")
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	addr, exited, _ = startRun(t, ctx, "--addr", "127.0.0.1:0")
	checkServing(t, dial(t, addr))
	cancel()
	if err := <-exited; err != nil {
		t.Fatal(err)
	}
}

func TestServeCommandLineErrors(t *testing.T) {
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badConfig, []byte(strings.ReplaceAll(testConfig, "model: offline", "modle: offline")), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
		code int
	}{
		{"missing apps file", append(noConsole(), "--config", filepath.Join(dir, "none.yaml"), "--data", filepath.Join(dir, "y.db")), nil, "none.yaml", 1},
		{"apps file from env", append(noConsole(), "--data", filepath.Join(dir, "z.db")), map[string]string{envConfig: badConfig}, "bad.yaml:7", 1},
		{"bad duration", append(noConsole(), "--max-run", "soon"), nil, "invalid value", 2},
		{"lease ttl zero", append(noConsole(), "--lease-ttl", "0s"), nil, "--lease-ttl must be positive", 2},
		{"stray argument", append(noConsole(), "now"), nil, "no arguments", 2},
		{"unknown command", []string{"serv"}, nil, `unknown command "serv"`, 2},
		{"no command", nil, nil, "no command", 2},
		{"sessions without a command", []string{"sessions"}, nil, "missing command", 2},
		{"sessions show without an id", []string{"sessions", "show", "--addr", "127.0.0.1:1"}, nil, "want one SESSION", 2},
		{"unbindable address", append(noConsole(), "--addr", "256.0.0.1:1", "--data", filepath.Join(dir, "x.db")), nil, "listen", 1},
		{"data is a directory", append(noConsole(), "--addr", "127.0.0.1:0", "--data", dir), nil, "open data file", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envConfig, "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stderr strings.Builder
			err := run(t.Context(), tc.args, strings.NewReader(""), io.Discard, &stderr)
			if err == nil {
				t.Fatal("run succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			if code := exitCode(err, io.Discard); code != tc.code {
				t.Errorf("exit code = %d, want %d", code, tc.code)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	var stderr strings.Builder
	err := run(t.Context(), []string{"serve", "-h"}, nil, io.Discard, &stderr)
	if !errors.Is(err, flag.ErrHelp) || exitCode(err, io.Discard) != 0 {
		t.Fatalf("serve -h = %v", err)
	}
	for _, want := range []string{envAddr, envData, envConfig, defaultAddr, defaultData, "-shutdown-grace", "default apps are served: demo, orders, slow, support"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("serve -h does not mention %q:\n%s", want, stderr.String())
		}
	}
	var stdout strings.Builder
	if err := run(t.Context(), []string{"help"}, nil, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "agentrunner serve") {
		t.Errorf("help output:\n%s", stdout.String())
	}
}

func TestServeDebugAddr(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, exited, logs := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "db"), "--debug-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`msg="debug server" addr=(\S+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no debug server address logged:\n%s", logs)
	}
	resp, err := http.Get("http://" + m[1] + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Fatalf("GET /debug/pprof/ = %d:\n%s", resp.StatusCode, body)
	}
	cancel()
	if err := <-exited; err != nil {
		t.Fatal(err)
	}
}

// TestShippedBinaryImportsNoExamples keeps examples/ out of the binary:
// an example is code to read and change freely, so nothing the binary
// does may depend on one (the demo app it serves is cmd/agentrunner/demo).
func TestShippedBinaryImportsNoExamples(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "/agentrunner/examples/") {
			t.Errorf("the agentrunner binary imports %s", pkg)
		}
	}
}
