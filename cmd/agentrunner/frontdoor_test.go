package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/protobuf/types/known/emptypb"
)

// countingZeros is a request body of n zero bytes made as it is read, so
// that a 32 MiB request costs the client nothing; read counts what the
// server took off the wire (plus what the sockets buffered).
type countingZeros struct {
	left int64
	read *atomic.Int64
}

func (z *countingZeros) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	if n > z.left {
		n = z.left
	}
	clear(p[:n])
	z.left -= n
	z.read.Add(n)
	return int(n), nil
}

// rssBytes is this process's resident set, from /proc.
func rssBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// TestUnauthenticatedBodiesNotRead: with an auth file, 16 requests of 32
// MiB at once without credentials, on each binding of the HTTP listener
// (Connect, gRPC-Web, A2A's JSON-RPC and REST), are each refused as
// unauthenticated before their bodies are read: the server read at most
// a few socket buffers of each, and the process grew by less than 16
// MiB. At 1dc16e9 Connect and gRPC-Web bodies were buffered and
// transcoded (four such requests took the server from 52 to 416 MB).
func TestUnauthenticatedBodiesNotRead(t *testing.T) {
	authFile := writeFile(t, filepath.Join(t.TempDir(), "auth.yaml"), `principals:
  - {name: alice, token_sha256: `+sha("alice-secret")+`, apps: ["*"], users: [self]}
`)
	_, console, _, _ := startConsole(t, "--auth-file", authFile)
	const size = 32 << 20
	bindings := []struct{ name, path, ct string }{
		{"Connect", "agentrunner.service.v1.SessionService/AppendEvent", "application/json"},
		{"gRPC-Web", "agentrunner.service.v1.SessionService/AppendEvent", "application/grpc-web+proto"},
		{"A2A JSON-RPC", "a2a/support/jsonrpc", "application/json"},
		{"A2A REST", "a2a/support/rest/message:send", "application/json"},
	}
	for _, b := range bindings {
		t.Run(b.name, func(t *testing.T) {
			runtime.GC()
			before := rssBytes(t)
			var read atomic.Int64
			var wg sync.WaitGroup
			answers := make([]string, 16)
			for i := range answers {
				wg.Go(func() {
					req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, console+b.path, &countingZeros{left: size, read: &read})
					if err != nil {
						answers[i] = err.Error()
						return
					}
					req.ContentLength = size
					req.Header.Set("Content-Type", b.ct)
					resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
					if err != nil {
						answers[i] = err.Error()
						return
					}
					defer resp.Body.Close()
					body, _ := io.ReadAll(resp.Body)
					answers[i] = fmt.Sprintf("%d/%s", resp.StatusCode, rpcCode(resp, body))
				})
			}
			wg.Wait()
			for i, a := range answers {
				if a != "401/unauthenticated" && a != "401/-" && a != "200/grpc-status 16" {
					t.Errorf("request %d: %s, want unauthenticated", i, a)
				}
			}
			grew := rssBytes(t) - before
			t.Logf("%s: 16 requests of 32 MiB: the clients handed over %d MiB in all; the process grew %d MiB", b.name, read.Load()>>20, grew>>20)
			if per := read.Load() / 16; per > 4<<20 {
				t.Errorf("%d bytes of each body were taken, want a few socket buffers", per)
			}
			if grew > 16<<20 {
				t.Errorf("the process grew %d MiB, want under 16", grew>>20)
			}
		})
	}
}

// TestStalledBodyIsCut: a request whose body stops coming is answered
// (or its connection closed) once --http-body-timeout has passed, on an
// RPC and on A2A; it held its connection for as long as the client
// wished at 1dc16e9. The wait is bounded by ten times the timeout so
// that a server that never cuts fails instead of hanging.
func TestStalledBodyIsCut(t *testing.T) {
	_, console, _, _ := startConsole(t, "--http-body-timeout", "300ms")
	u, err := url.Parse(console)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/agentrunner.service.v1.SessionService/AppendEvent", "/a2a/support/jsonrpc"} {
		t.Run(path, func(t *testing.T) {
			conn, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nConnect-Protocol-Version: 1\r\nContent-Length: 1000\r\n\r\n{\"appName\":", path, u.Host)
			if err := conn.SetReadDeadline(time.Now().Add(3 * time.Second)); err != nil {
				t.Fatal(err)
			}
			status, err := bufio.NewReader(conn).ReadString('\n')
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the stalled body was not cut within 3 s: %v", err)
			}
			t.Logf("answer: %q, %v", strings.TrimSpace(status), err)
			if err == nil && !strings.Contains(status, " 4") {
				t.Errorf("answer %q, want a client error", status)
			}
		})
	}
}

// TestA2ABodiesBoundedByMaxRequestBytes: A2A's JSON-RPC and REST bodies
// are bounded by --max-request-bytes as the RPCs are (413); at 1dc16e9 a
// 200 KB message ran where the gRPC port refused 64 KiB.
func TestA2ABodiesBoundedByMaxRequestBytes(t *testing.T) {
	_, console, _, _ := startConsole(t, "--max-request-bytes", "65536")
	big := strings.Repeat("x", 200<<10)
	for _, c := range []struct{ path, body string }{
		{"a2a/support/jsonrpc", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"` + big + `"}]}}}`},
		{"a2a/support/rest/message:send", `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"` + big + `"}]}}`},
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, console+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		answer, body, err := sendBody(http.DefaultClient, req)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(answer, "413/") {
			t.Errorf("%s with 200 KB: %s %s, want 413", c.path, answer, body[:min(len(body), 200)])
		}
	}
}

// TestHTTPListenerHosts: a loopback listener without auth refuses a Host
// that is not loopback even with --insecure-no-auth (which switched the
// check off at 1dc16e9), and lets through --http-allowed-hosts.
func TestHTTPListenerHosts(t *testing.T) {
	_, console, _, _ := startConsole(t, "--insecure-no-auth", "--http-allowed-hosts", "agents.example.com")
	for host, want := range map[string]int{"evil.example": 403, "agents.example.com": 200, "AGENTS.example.com:8080": 200, "localhost": 200} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, console+listApps, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// TestConsoleSecurityHeaders: the console's page carries a strict
// Content-Security-Policy (none at 1dc16e9) and no referrer.
func TestConsoleSecurityHeaders(t *testing.T) {
	_, console, _, _ := startConsole(t)
	resp, err := http.Get(console)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if got := resp.Header.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("Referrer-Policy %q", got)
	}
}

// TestServeWithoutA2A: --a2a=false serves no A2A binding: no card, no
// JSON-RPC, no gRPC service.
func TestServeWithoutA2A(t *testing.T) {
	addr, console, _, _ := startConsole(t, "--a2a=false")
	resp, err := http.Get(console + "a2a/support/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), `"protocolVersion"`) || strings.Contains(string(body), `"skills"`) {
		t.Errorf("an agent card with --a2a=false: %d %s", resp.StatusCode, body[:min(len(body), 200)])
	}
	conn := dial(t, addr)
	err = conn.Invoke(t.Context(), "/lf.a2a.v1.A2AService/GetTask", &emptypb.Empty{}, &emptypb.Empty{})
	if err == nil || !strings.Contains(err.Error(), "Unimplemented") {
		t.Errorf("A2A's gRPC binding with --a2a=false: %v, want Unimplemented", err)
	}
}

// cardURL fetches app support's agent card as the client described and
// returns its JSON-RPC URL and the Cache-Control header.
func cardURL(t *testing.T, console string, header map[string]string) (string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, console+"a2a/support/.well-known/agent-card.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card struct {
		SupportedInterfaces []struct{ URL, ProtocolBinding string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	for _, i := range card.SupportedInterfaces {
		if i.ProtocolBinding == "JSONRPC" {
			return i.URL, resp.Header.Get("Cache-Control")
		}
	}
	t.Fatalf("no JSON-RPC interface on the card: %+v", card)
	return "", ""
}

// TestAgentCardURLs: a card's URLs come from --public-url when set
// (and may be cached), else from Forwarded / X-Forwarded-* only when the
// request comes from one of --trusted-proxies, else from the Host; a
// card built from a request is not for shared caches. At 1dc16e9 every
// card took the Host header, ignored proxies and carried no
// Cache-Control.
func TestAgentCardURLs(t *testing.T) {
	authFile := writeFile(t, filepath.Join(t.TempDir(), "auth.yaml"), `principals:
  - {name: alice, token_sha256: `+sha("alice-secret")+`, apps: ["*"], users: [self]}
`)
	forged := map[string]string{"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"}
	_, plain, _, _ := startConsole(t, "--auth-file", authFile)
	u, _ := url.Parse(plain)
	if got, cc := cardURL(t, plain, forged); got != "http://"+u.Host+"/a2a/support/jsonrpc" || cc != "no-cache" {
		t.Errorf("untrusted X-Forwarded-Host: %s (Cache-Control %q), want the Host's URL, no-cache", got, cc)
	}
	_, proxied, _, _ := startConsole(t, "--auth-file", authFile, "--trusted-proxies", "127.0.0.1/32,::1")
	if got, _ := cardURL(t, proxied, map[string]string{"X-Forwarded-Host": "agents.example.com", "X-Forwarded-Proto": "https"}); got != "https://agents.example.com/a2a/support/jsonrpc" {
		t.Errorf("X-Forwarded-Host from a trusted proxy: %s", got)
	}
	if got, _ := cardURL(t, proxied, map[string]string{"Forwarded": `for=192.0.2.1;host="fw.example:8443";proto=https, for=10.0.0.1`}); got != "https://fw.example:8443/a2a/support/jsonrpc" {
		t.Errorf("Forwarded from a trusted proxy: %s", got)
	}
	if got, _ := cardURL(t, proxied, map[string]string{"X-Forwarded-Host": "bad host/x"}); !strings.HasPrefix(got, "http://127.0.0.1:") {
		t.Errorf("a malformed forwarded host was used: %s", got)
	}
	_, public, _, _ := startConsole(t, "--auth-file", authFile, "--public-url", "https://public.example/ai/")
	if got, cc := cardURL(t, public, forged); got != "https://public.example/ai/a2a/support/jsonrpc" || !strings.Contains(cc, "public") {
		t.Errorf("--public-url: %s (Cache-Control %q)", got, cc)
	}
}

// TestHTTPAccessLogAndCanary: every request on the HTTP listener, A2A's
// included, leaves an "http" log line (the client's mistakes at INFO,
// with their status), and a secret a client sends (a token, valid or
// not, a body) shows in no log line. At 1dc16e9 the listener and A2A's
// bindings logged no request.
func TestHTTPAccessLogAndCanary(t *testing.T) {
	const canary = "canary-5f3a9d71"
	authFile := writeFile(t, filepath.Join(t.TempDir(), "auth.yaml"), `principals:
  - {name: alice, token_sha256: `+sha("alice-secret")+`, apps: ["*"], users: [self]}
`)
	_, console, logs, _ := startConsole(t, "--auth-file", authFile)
	send := func(path, ct, body string, h map[string]string) string {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, console+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ct)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		answer, _, err := sendBody(http.DefaultClient, req)
		if err != nil {
			t.Fatal(err)
		}
		return answer
	}
	if a := send(listApps, "application/json", `{}`, map[string]string{"Authorization": "Bearer " + canary}); a != "401/unauthenticated" {
		t.Errorf("a token naming no principal: %s", a)
	}
	if a := send("a2a/support/jsonrpc", "application/json", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"`+canary+`"}]}}}`, map[string]string{"Authorization": "Bearer " + canary}); !strings.HasPrefix(a, "401/") {
		t.Errorf("A2A with a token naming no principal: %s", a)
	}
	if a := send("agentrunner.service.v1.SessionService/GetSession", "application/json", `{"appName":`+canary, map[string]string{"Authorization": "Bearer alice-secret"}); a != "400/invalid_argument" {
		t.Errorf("a malformed body: %s", a)
	}
	for _, want := range []string{
		"msg=http method=POST path=/agentrunner.service.v1.RunnerService/ListApps status=401",
		"msg=http method=POST path=/a2a/support/jsonrpc status=401",
		"msg=http method=POST path=/agentrunner.service.v1.SessionService/GetSession status=400",
	} {
		if !logs.waitFor(want, 10*time.Second) {
			t.Errorf("no log line %q in:\n%s", want, logs)
		}
	}
	text := logs.String()
	if strings.Contains(text, canary) || strings.Contains(text, "alice-secret") {
		t.Errorf("a secret is in the log:\n%s", text)
	}
}

// TestHTTPMaxConns: with --http-max-conns 2, two connections held open
// leave a third request waiting (it is not served while they stay), and
// it is served once one of them closes.
func TestHTTPMaxConns(t *testing.T) {
	_, console, _, _ := startConsole(t, "--http-max-conns", "2")
	u, _ := url.Parse(console)
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		// A request's start, so the server has surely accepted it.
		fmt.Fprintf(c, "POST /%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", listApps, u.Host)
		if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	quick := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{}}
	if _, err := quick.Post(console+listApps, "application/json", strings.NewReader(`{}`)); err == nil {
		t.Fatal("a third connection was served while two were held")
	}
	held[0].Close()
	defer held[1].Close()
	code, body := postJSON(t, &http.Client{Transport: &http.Transport{}}, console+listApps, `{}`, nil)
	if code != 200 {
		t.Errorf("after a held connection closed: %d %s", code, body)
	}
}

// TestA2AListTasksTotal: ListTasks' totalSize counts every task the
// listing matches, not the page's (it was the page's length at 1dc16e9).
func TestA2AListTasksTotal(t *testing.T) {
	_, console, _, _ := startConsole(t)
	c, _ := a2aClient(t, console, "support", a2a.TransportProtocolJSONRPC)
	for i := range 3 {
		if _, err := c.SendMessage(t.Context(), textMessage("", fmt.Sprintf("order %d?", i))); err != nil {
			t.Fatal(err)
		}
	}
	first, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Tasks) != 1 || first.TotalSize != 3 || first.NextPageToken == "" {
		t.Fatalf("first page: %d tasks, totalSize %d, next %q; want 1, 3, a token", len(first.Tasks), first.TotalSize, first.NextPageToken)
	}
	second, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{PageSize: 2, PageToken: first.NextPageToken})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Tasks) != 2 || second.TotalSize != 3 {
		t.Errorf("second page: %d tasks, totalSize %d; want 2, 3", len(second.Tasks), second.TotalSize)
	}
	all, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{PageSize: 10})
	if err != nil || all.TotalSize != 3 || len(all.Tasks) != 3 {
		t.Errorf("one page of all: %+v, %v", all, err)
	}
}
