package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/server/auth/devcerts"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// consoleLine is the console's URL in the serving line.
var consoleLine = regexp.MustCompile(`msg=serving .*console=(\S+)`)

// startConsole runs serve in-process with the HTTP listener on a free
// loopback port (plus args) and returns the gRPC address, the console's
// URL as logged, the logs, and a stop that waits for serve to return nil.
func startConsole(t *testing.T, args ...string) (addr, console string, logs *logWatcher, stop func()) {
	t.Helper()
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE", envConfig, envAuthFile, envHTTPPrefix} {
		t.Setenv(k, "")
	}
	ctx, cancel := context.WithCancel(context.Background())
	all := append([]string{"--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "a.db")}, args...)
	addr, exited, logs := startRun(t, ctx, all...)
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-exited; err != nil {
			t.Errorf("serve: %v\n%s", err, logs)
		}
	}
	t.Cleanup(stop)
	m := consoleLine.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no console URL in the serving line:\n%s", logs)
	}
	return addr, m[1], logs, stop
}

// postJSON makes a Connect unary call with JSON, as curl or a browser
// would, and returns the status and body.
func postJSON(t *testing.T, c *http.Client, url, body string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Protocol-Version", "1")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

const listApps = "agentrunner.service.v1.RunnerService/ListApps"

// TestConsoleProtocols: the HTTP listener answers every protocol from
// the same server: Connect JSON (plain HTTP), a Connect server stream
// that delivers a run's events while it runs, gRPC-Web, and grpc-go over
// h2c; around them, the page, deep links and unknown methods.
func TestConsoleProtocols(t *testing.T) {
	addr, console, logs, _ := startConsole(t, "--log-level", "debug")
	if !strings.HasPrefix(console, "http://127.0.0.1:") || !strings.HasSuffix(console, "/") || strings.HasSuffix(console, ":0/") {
		t.Fatalf("console URL %q is not the bound loopback port", console)
	}
	c := http.DefaultClient

	code, body := postJSON(t, c, console+listApps, "{}", nil)
	if code != http.StatusOK || !strings.Contains(body, `"name":"slow"`) {
		t.Fatalf("Connect JSON ListApps: %d %s", code, body)
	}
	// The logging interceptor of the gRPC server saw the call.
	if !logs.waitFor("msg=rpc method=/"+listApps+" code=OK", 10*time.Second) {
		t.Errorf("no RPC log line for the HTTP call:\n%s", logs)
	}

	web := connect.NewClient[servicev1.ListAppsRequest, servicev1.ListAppsResponse](c, console+listApps, connect.WithGRPCWeb())
	apps, err := web.CallUnary(t.Context(), connect.NewRequest(&servicev1.ListAppsRequest{}))
	if err != nil || len(apps.Msg.GetApps()) < 4 {
		t.Fatalf("gRPC-Web ListApps: %v, %v", apps, err)
	}

	conn, err := grpc.NewClient(strings.TrimSuffix(strings.TrimPrefix(console, "http://"), "/"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if h, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health over h2c: %v, %v", h, err)
	}
	if r, err := servicev1.NewRunnerServiceClient(conn).ListApps(t.Context(), &servicev1.ListAppsRequest{}); err != nil || len(r.GetApps()) < 4 {
		t.Fatalf("grpc-go ListApps over h2c: %v, %v", r, err)
	}
	err = conn.Invoke(t.Context(), "/agentrunner.service.v1.RunnerService/Nope", &servicev1.ListAppsRequest{}, &servicev1.ListAppsResponse{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("grpc-go unknown method: %v, want Unimplemented", err)
	}

	streamRun(t, c, console, dial(t, addr), "s1")

	code, body = postJSON(t, c, console+"agentrunner.service.v1.RunnerService/Nope", "{}", nil)
	if code != http.StatusNotFound || !strings.Contains(body, `"code":"unimplemented"`) {
		t.Errorf("Connect unknown method: %d %s", code, body)
	}
	for path, want := range map[string]int{"": 200, "sessions/s1/events": 200, "index.html": 200, "missing.js": 404, listApps: 405} {
		if code, body := get(t, &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, console+path); code != want {
			t.Errorf("GET /%s: %d, want %d", path, code, want)
		} else if want == 200 && !strings.Contains(body, "<title>agentrunner console</title>") {
			t.Errorf("GET /%s is not the console:\n%s", path, body)
		}
	}
}

// streamRun runs the slow app over a Connect server stream and checks
// that its first records arrive while the run is still running (asked
// over gRPC), then that the stream ends with the run's final record.
func streamRun(t *testing.T, c *http.Client, console string, conn *grpc.ClientConn, session string) {
	t.Helper()
	if _, err := servicev1.NewSessionServiceClient(conn).CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "slow", UserId: "u", SessionId: session}); err != nil {
		t.Fatal(err)
	}
	rc := connect.NewClient[servicev1.RunRequest, servicev1.RunResponse](c, console+"agentrunner.service.v1.RunnerService/Run")
	stream, err := rc.CallServerStream(t.Context(), connect.NewRequest(&servicev1.RunRequest{AppName: "slow", UserId: "u", SessionId: session, NewMessage: userText("hello there")}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if !stream.Receive() {
		t.Fatalf("no first message: %v", stream.Err())
	}
	runID := stream.Msg().GetRun().GetRunId()
	if runID == "" {
		t.Fatalf("first message %v is not the run", stream.Msg())
	}
	live, err := servicev1.NewRunnerServiceClient(conn).GetRun(t.Context(), &servicev1.GetRunRequest{RunId: runID})
	if err != nil {
		t.Fatal(err)
	}
	if s := live.GetRun().GetStatus(); s != agentrunnerv1.RunStatus_RUN_STATUS_RUNNING && s != agentrunnerv1.RunStatus_RUN_STATUS_PENDING {
		t.Fatalf("the stream's first message came when the run was %v, not while it ran", s)
	}
	var events int
	var last *agentrunnerv1.Run
	for stream.Receive() {
		if stream.Msg().GetEvent() != nil {
			events++
		}
		if r := stream.Msg().GetRun(); r != nil {
			last = r
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if events == 0 || last.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("stream ended after %d events with %v, want events and SUCCEEDED", events, last)
	}
}

// TestConsolePrefix: under --http-prefix, RPCs and the page are under the
// prefix, and nothing is outside it.
func TestConsolePrefix(t *testing.T) {
	_, console, _, _ := startConsole(t, "--http-prefix", "/agentrunner/")
	if !strings.HasSuffix(console, "/agentrunner/") {
		t.Fatalf("console URL %q lacks the prefix", console)
	}
	root := strings.TrimSuffix(console, "agentrunner/")
	c := http.DefaultClient
	if code, body := postJSON(t, c, console+listApps, "{}", nil); code != 200 || !strings.Contains(body, `"slow"`) {
		t.Errorf("ListApps under the prefix: %d %s", code, body)
	}
	for _, path := range []string{"", "sessions/x"} {
		code, body := get(t, c, console+path)
		if code != 200 || !strings.Contains(body, `<base href="/agentrunner/">`) {
			t.Errorf("GET %s: %d, want the page with its base under the prefix:\n%s", console+path, code, body)
		}
	}
	if code, _ := get(t, c, strings.TrimSuffix(console, "/")); code != 200 {
		t.Errorf("GET of the bare prefix: %d, want a redirect to the page", code)
	}
	if code, _ := postJSON(t, c, root+listApps, "{}", nil); code != http.StatusNotFound {
		t.Errorf("ListApps outside the prefix: %d, want 404", code)
	}
	for _, path := range []string{"", "index.html", "sessions/x", "agentrunnerx/"} {
		if code, _ := get(t, c, root+path); code != http.StatusNotFound {
			t.Errorf("GET /%s outside the prefix: %d, want 404", path, code)
		}
	}
}

// TestConsoleSecure: with TLS, mTLS and an auth file, the HTTP listener
// serves HTTPS over HTTP/2 with the same certificate, and the same
// authentication answers there: no token is Unauthenticated, a token's
// principal sees its apps only, and a client certificate names its
// principal through the transcoder.
func TestConsoleSecure(t *testing.T) {
	dir := t.TempDir()
	if err := devcerts.Generate(devcerts.Options{Dir: dir, Hosts: []string{"localhost", "127.0.0.1"}, Clients: []string{"carol"}}); err != nil {
		t.Fatal(err)
	}
	authFile := writeFile(t, filepath.Join(dir, "auth.yaml"), `principals:
  - {name: alice, token_sha256: `+sha("alice-secret")+`, apps: [demo], users: [self]}
  - {name: carol, mtls_identity: carol, apps: ["*"], users: [self]}
`)
	_, console, _, _ := startConsole(t, "--auth-file", authFile, "--tls-cert", filepath.Join(dir, "server.pem"),
		"--tls-key", filepath.Join(dir, "server.key"), "--client-ca", filepath.Join(dir, "ca.pem"))
	if !strings.HasPrefix(console, "https://127.0.0.1:") {
		t.Fatalf("console URL %q is not https", console)
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	tc := &tls.Config{RootCAs: pool}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}}

	if code, body := postJSON(t, c, console+listApps, "{}", nil); code != http.StatusUnauthorized || !strings.Contains(body, `"code":"unauthenticated"`) {
		t.Errorf("no token: %d %s, want 401 unauthenticated", code, body)
	}
	code, body := postJSON(t, c, console+listApps, "{}", http.Header{"Authorization": {"Bearer alice-secret"}})
	if code != 200 || !strings.Contains(body, `"name":"demo"`) || strings.Contains(body, `"name":"slow"`) {
		t.Errorf("alice's token: %d %s, want demo only", code, body)
	}
	resp, err := c.Get(console)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Proto != "HTTP/2.0" || resp.StatusCode != 200 {
		t.Errorf("page over HTTPS: %s %d, want HTTP/2.0 200", resp.Proto, resp.StatusCode)
	}

	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client-carol.pem"), filepath.Join(dir, "client-carol.key"))
	if err != nil {
		t.Fatal(err)
	}
	mtc := tc.Clone()
	mtc.Certificates = []tls.Certificate{cert}
	mc := &http.Client{Transport: &http.Transport{TLSClientConfig: mtc, ForceAttemptHTTP2: true}}
	if code, body := postJSON(t, mc, console+listApps, "{}", nil); code != 200 || !strings.Contains(body, `"name":"slow"`) {
		t.Errorf("carol's certificate: %d %s, want every app", code, body)
	}

	plain, err := http.Get("http://" + strings.TrimPrefix(console, "https://"))
	if err == nil {
		plain.Body.Close()
		if plain.StatusCode == 200 {
			t.Errorf("plain HTTP to the TLS listener answered 200")
		}
	}
}

// TestConsoleListenErrors: the HTTP listener is held to --addr's rule (no
// address beyond loopback without authentication), and a busy port says
// which flag to change.
func TestConsoleListenErrors(t *testing.T) {
	t.Setenv(envConfig, "")
	t.Setenv(envAuthFile, "")
	dir := t.TempDir()
	err := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--http-addr", "0.0.0.0:0", "--data", filepath.Join(dir, "a.db")}, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "(--http-addr), which is not a loopback address") || !strings.Contains(err.Error(), "--insecure-no-auth") {
		t.Errorf("--http-addr 0.0.0.0 without auth: %v", err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	err = run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--http-addr", busy.Addr().String(), "--data", filepath.Join(dir, "b.db")}, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "listen --http-addr "+busy.Addr().String()) || !strings.Contains(err.Error(), `--http-addr ""`) {
		t.Errorf("busy --http-addr: %v", err)
	}
	for _, bad := range []string{"agentrunner", "/a//b", "/a/../b", "/a b", "/a?b"} {
		err := run(t.Context(), []string{"serve", "--http-prefix", bad}, strings.NewReader(""), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--http-prefix") || exitCode(err, io.Discard) != 2 {
			t.Errorf("--http-prefix %q: %v, want a usage error", bad, err)
		}
	}
}

// TestConsoleShutdownStream: at shutdown a Run streaming on the HTTP
// listener is not cut off: the run drains, and the stream delivers the
// rest of its events and its final record before serve returns.
func TestConsoleShutdownStream(t *testing.T) {
	addr, console, logs, stop := startConsole(t)
	conn := dial(t, addr)
	if _, err := servicev1.NewSessionServiceClient(conn).CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "slow", UserId: "u", SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	rc := connect.NewClient[servicev1.RunRequest, servicev1.RunResponse](http.DefaultClient, console+"agentrunner.service.v1.RunnerService/Run", connect.WithGRPCWeb())
	stream, err := rc.CallServerStream(t.Context(), connect.NewRequest(&servicev1.RunRequest{AppName: "slow", UserId: "u", SessionId: "s", NewMessage: userText("drain me")}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if !stream.Receive() || stream.Msg().GetRun() == nil {
		t.Fatalf("no first record: %v", stream.Err())
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	var last *agentrunnerv1.Run
	for stream.Receive() {
		if r := stream.Msg().GetRun(); r != nil {
			last = r
		}
	}
	if err := stream.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("stream cut at shutdown: %v\n%s", err, logs)
	}
	if last.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("final record %v, want SUCCEEDED", last)
	}
	<-stopped
	if !strings.Contains(logs.String(), "msg=stopped") {
		t.Errorf("serve did not stop cleanly:\n%s", logs)
	}
}
