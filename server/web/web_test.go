package web

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"connectrpc.com/connect"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/server/console"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestCleanPrefix(t *testing.T) {
	for in, want := range map[string]string{"": "", "/": "", "/agentrunner": "/agentrunner", "/agentrunner/": "/agentrunner", "/a/b-c_d.e~f/": "/a/b-c_d.e~f"} {
		if got, err := CleanPrefix(in); err != nil || got != want {
			t.Errorf("CleanPrefix(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"agentrunner", "//", "/a//b", "/a/./b", "/a/..", "/a b", "/a%20b", "/a?b", "/a#b", "/é"} {
		if got, err := CleanPrefix(in); err == nil {
			t.Errorf("CleanPrefix(%q) = %q, want an error", in, got)
		}
	}
}

// gate is a RunnerService whose Run sends the run's record, then waits
// for release (or the stream's end) before it sends the final one.
type gate struct {
	servicev1.UnimplementedRunnerServiceServer
	release chan struct{}
}

func (g gate) Run(_ *servicev1.RunRequest, s grpc.ServerStreamingServer[servicev1.RunResponse]) error {
	run := func(st agentrunnerv1.RunStatus) *servicev1.RunResponse {
		return &servicev1.RunResponse{Payload: &servicev1.RunResponse_Run{Run: &agentrunnerv1.Run{RunId: "r", Status: st}}}
	}
	if err := s.Send(run(agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)); err != nil {
		return err
	}
	select {
	case <-g.release:
	case <-s.Context().Done():
		return s.Context().Err()
	}
	return s.Send(run(agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED))
}

// startWeb serves a grpc.Server with health and g (counting the calls
// its interceptor sees) on a loopback port, and returns the base URL.
func startWeb(t *testing.T, g gate, prefix string, calls *atomic.Int32) (*Server, string) {
	t.Helper()
	gs := grpc.NewServer(grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		calls.Add(1)
		return h(srv, ss)
	}))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	servicev1.RegisterRunnerServiceServer(gs, g)
	s, err := New(Config{GRPC: gs, Console: console.FS(), Prefix: prefix, MaxMessageBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		gs.Stop()
	})
	return s, URL(lis.Addr(), false, prefix)
}

// TestShutdownWaitsForStreams: Shutdown lets a stream in flight finish:
// it closes the listener at once, and returns only once the stream has
// sent its last message, which the client receives whole.
func TestShutdownWaitsForStreams(t *testing.T) {
	g := gate{release: make(chan struct{})}
	var calls atomic.Int32
	s, base := startWeb(t, g, "", &calls)
	rc := connect.NewClient[servicev1.RunRequest, servicev1.RunResponse](http.DefaultClient, base+"agentrunner.service.v1.RunnerService/Run")
	stream, err := rc.CallServerStream(t.Context(), connect.NewRequest(&servicev1.RunRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if !stream.Receive() {
		t.Fatal(stream.Err())
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- s.Shutdown(ctx)
	}()
	// Shutdown has begun once the listener refuses connections.
	addr := strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/")
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if i == 1000 {
			t.Fatal("the listener still accepts after 1000 tries")
		}
		time.Sleep(time.Millisecond) // polling for the listener to close
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a stream in flight", err)
	default:
	}
	close(g.release)
	if !stream.Receive() || stream.Msg().GetRun().GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("final record: %v, %v", stream.Msg(), stream.Err())
	}
	if stream.Receive() || stream.Err() != nil {
		t.Fatalf("stream after the final record: %v, %v", stream.Msg(), stream.Err())
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if calls.Load() != 1 {
		t.Errorf("the stream interceptor saw %d calls, want 1", calls.Load())
	}
}

func do(t *testing.T, method, url, contentType string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestPages: what is not an RPC: the page for deep links, files, 404 for
// a missing asset, RPC errors for RPC-shaped requests, and the prefix.
func TestPages(t *testing.T) {
	var calls atomic.Int32
	_, base := startWeb(t, gate{}, "/ar", &calls)
	root := strings.TrimSuffix(base, "ar/")
	for _, tc := range []struct {
		method, path, ct string
		code             int
		want             string
	}{
		{"GET", "", "", 200, `<base href="/ar/">`},
		{"GET", "runs/r1", "", 200, "<title>agentrunner console</title>"},
		{"HEAD", "runs/r1", "", 200, ""},
		{"GET", "runs/", "", 200, "<title>agentrunner console</title>"},
		{"GET", "no-such-asset.js", "", 404, ""}, // a broken build fails loudly
		{"GET", "app.js", "", 200, "function"},
		{"PUT", "runs/r1", "", 405, ""},
		{"POST", "runs/r1", "application/json", 404, `"code":"unimplemented"`},
		{"GET", "agentrunner.service.v1.RunnerService/Nope", "", 404, `"code":"unimplemented"`},
		{"POST", "agentrunner.service.v1.RunnerService/Nope", "application/connect+proto", 404, `"code":"unimplemented"`},
	} {
		resp, body := do(t, tc.method, base+tc.path, tc.ct)
		if resp.StatusCode != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s /ar/%s: %d %q, want %d with %q", tc.method, tc.path, resp.StatusCode, body, tc.code, tc.want)
		}
	}
	// gRPC-Web for a method no service has: Unimplemented in the headers.
	resp, _ := do(t, "POST", base+"agentrunner.service.v1.RunnerService/Nope", "application/grpc-web+proto")
	if resp.Header.Get("Grpc-Status") != "12" {
		t.Errorf("gRPC-Web unknown method: %d %v, want grpc-status 12", resp.StatusCode, resp.Header)
	}
	if resp, _ := do(t, "GET", root+"ar", ""); resp.StatusCode != 301 || resp.Header.Get("Location") != "/ar/" {
		t.Errorf("GET /ar: %d %v, want a redirect to /ar/", resp.StatusCode, resp.Header)
	}
	for _, p := range []string{"", "runs/r1", "arx", "grpc.health.v1.Health/Check"} {
		if resp, _ := do(t, "GET", root+p, ""); resp.StatusCode != 404 {
			t.Errorf("GET /%s outside the prefix: %d, want 404", p, resp.StatusCode)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("%d calls reached the services", calls.Load())
	}
}

func TestHandlerNeedsIndex(t *testing.T) {
	_, err := Handler(Config{GRPC: grpc.NewServer(), Console: fstest.MapFS{"app.js": {}}})
	if err == nil || !strings.Contains(err.Error(), "index.html") {
		t.Errorf("a console without index.html: %v", err)
	}
	_, err = Handler(Config{GRPC: grpc.NewServer(), Console: console.FS(), Prefix: "/x/"})
	if err == nil {
		t.Errorf("an unclean prefix: %v", err)
	}
}

// TestCrossSiteAndRebinding: a browser's cross-site POST (which a page
// may send to any site without asking) is refused before it reaches A2A
// or an RPC, while same-origin requests and clients that are not
// browsers pass; with LoopbackHosts, a Host that is not localhost or a
// loopback address (a rebound domain) is refused too.
func TestCrossSiteAndRebinding(t *testing.T) {
	var calls atomic.Int32
	a2a := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) })
	for _, loopbackOnly := range []bool{true, false} {
		h, err := Handler(Config{GRPC: grpc.NewServer(), Console: console.FS(), A2A: a2a, LoopbackHosts: loopbackOnly})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			method, host, site string
			code               int
			reaches            bool
		}{
			{"POST", "127.0.0.1:8080", "cross-site", 403, false},
			{"POST", "127.0.0.1:8080", "same-origin", 200, true},
			{"POST", "127.0.0.1:8080", "", 200, true}, // not a browser
			{"POST", "localhost:8080", "", 200, true},
			{"POST", "[::1]:8080", "", 200, true},
			{"POST", "rebind.evil.example:8080", "same-origin", map[bool]int{true: 403, false: 200}[loopbackOnly], !loopbackOnly},
			{"GET", "rebind.evil.example", "", map[bool]int{true: 403, false: 200}[loopbackOnly], false},
		} {
			calls.Store(0)
			path := "/a2a/demo/jsonrpc"
			if tc.method == "GET" {
				path = "/"
			}
			req := httptest.NewRequest(tc.method, "http://"+tc.host+path, strings.NewReader(`{"jsonrpc":"2.0"}`))
			req.Header.Set("Content-Type", "text/plain")
			if tc.site != "" {
				req.Header.Set("Sec-Fetch-Site", tc.site)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code || (calls.Load() == 1) != tc.reaches {
				t.Errorf("loopback hosts %v, %s %s (Sec-Fetch-Site %q): %d, reached A2A %v; want %d, %v", loopbackOnly, tc.method, tc.host, tc.site, rec.Code, calls.Load() == 1, tc.code, tc.reaches)
			}
		}
	}
}

// TestBadJSONIsInvalidArgument: a Connect call whose JSON body does not
// decode is the caller's mistake (invalid_argument, 400), as a malformed
// binary request is on either port, not "unknown"; and it reaches no
// handler.
func TestBadJSONIsInvalidArgument(t *testing.T) {
	var calls atomic.Int32
	_, base := startWeb(t, gate{}, "", &calls)
	for _, body := range []string{`notjson`, `{"service":5}`} {
		req, err := http.NewRequestWithContext(t.Context(), "POST", base+"grpc.health.v1.Health/Check", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Connect-Protocol-Version", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), `"code":"invalid_argument"`) {
			t.Errorf("body %q: %d %s, want 400 invalid_argument", body, resp.StatusCode, b)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("%d calls reached the services", calls.Load())
	}
}

// TestConnectWithoutVersionHeader: a unary Connect call without the
// Connect-Protocol-Version header (as curl sends it) is served like one
// with it, in JSON and in binary; a POST of another type to the same path
// is refused as such (415), and a streaming RPC's path is not
// taken for a unary call.
func TestConnectWithoutVersionHeader(t *testing.T) {
	var calls atomic.Int32
	_, base := startWeb(t, gate{}, "", &calls)
	post := func(path, ct, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), "POST", base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const check = "grpc.health.v1.Health/Check"
	for _, ct := range []string{"application/json", "application/json; charset=utf-8"} {
		if code, body := post(check, ct, `{}`); code != 200 || !strings.Contains(body, `"status":"SERVING"`) {
			t.Errorf("%s without the version header: %d %s, want 200 SERVING", ct, code, body)
		}
	}
	// An empty HealthCheckRequest is an empty body; SERVING is field 1 = 1.
	if code, body := post(check, "application/proto", ""); code != 200 || body != "\x08\x01" {
		t.Errorf("application/proto without the version header: %d %q, want 200 08 01", code, body)
	}
	if got := calls.Load(); got != 0 {
		t.Errorf("%d unary calls went through the stream interceptor", got)
	}
	// A body of a type no protocol has, for a method the server has, is
	// refused as such (vanguard took it for REST and answered 404).
	if code, body := post(check, "text/plain", `{}`); code != http.StatusUnsupportedMediaType || !strings.Contains(body, "application/connect+proto") {
		t.Errorf("text/plain: %d %s, want 415 naming the types taken", code, body)
	}
	if code, _ := post("agentrunner.service.v1.RunnerService/Run", "application/json", `{}`); code == 200 {
		t.Errorf("a streaming RPC answered 200 to a unary Connect call")
	}
}
