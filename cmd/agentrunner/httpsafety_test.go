package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stressBody is the reproducer of the HTTP listener's crash: a valid
// Connect envelope, then one whose flags (2, end of stream) no request
// may carry. vanguard's reader refused the second from grpc-go's reader
// goroutine by ending the response, while the handler, already returned
// (refused for want of credentials, or out of time), had grpc-go write
// the same response: a concurrent map write that stopped the process.
var stressBody = []byte("\x00\x00\x00\x00\x02{}\x02\x00\x00\x00\x02{}")

// stressRequests is how many requests TestHTTPListenerSurvivesFloods
// sends per mode: main at 1dc16e9 died within 156 to 5,857 of them (13
// rounds on this machine, median about 1,800), so 60,000 is over ten
// times the most it ever took. AGENTRUNNER_HTTP_STRESS_REQUESTS changes
// it.
func stressRequests(t *testing.T) int {
	if v := os.Getenv("AGENTRUNNER_HTTP_STRESS_REQUESTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("AGENTRUNNER_HTTP_STRESS_REQUESTS=%q: %v", v, err)
		}
		return n
	}
	return 60000
}

// TestHTTPListenerSurvivesFloods floods the HTTP listener with the
// crash's reproducer, 1 ms timeouts and malformed envelopes in every
// protocol, without and with an auth file (the refusal for want of
// credentials used to open the window), in parallel; the server must
// answer every one with a client error, never a 5xx or an Internal, and
// still serve afterwards. AGENTRUNNER_HTTP_STRESS_URL points the flood at
// a server already running instead (to measure another build).
func TestHTTPListenerSurvivesFloods(t *testing.T) {
	n := stressRequests(t)
	if url := os.Getenv("AGENTRUNNER_HTTP_STRESS_URL"); url != "" {
		res := flood(context.Background(), url, n, "")
		t.Logf("%s: %s", url, res)
		return
	}
	dir := t.TempDir()
	authFile := writeFile(t, filepath.Join(dir, "auth.yaml"), `principals:
  - {name: alice, token_sha256: `+sha("alice-secret")+`, apps: ["*"], users: [self]}
`)
	for _, mode := range []struct {
		name  string
		args  []string
		token string
	}{
		{"without auth", nil, ""},
		{"with auth, no credentials", []string{"--auth-file", authFile}, ""},
		{"with auth, a valid token", []string{"--auth-file", authFile}, "alice-secret"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			_, console, _, _ := startConsole(t, mode.args...)
			res := flood(t.Context(), console, n/3+1, mode.token)
			t.Logf("%s", res)
			if res.failed > 0 || res.serverErrors > 0 {
				t.Fatalf("%s", res)
			}
			// Still serving, and serving right.
			h := http.Header{}
			if mode.token != "" {
				h.Set("Authorization", "Bearer "+mode.token)
			}
			if mode.token != "" || mode.args == nil {
				if code, body := postJSON(t, http.DefaultClient, console+listApps, `{}`, h); code != 200 || !strings.Contains(body, `"apps"`) {
					t.Errorf("ListApps after the flood: %d %s", code, body)
				}
			}
		})
	}
}

// floodResult counts what a flood got back.
type floodResult struct {
	sent, failed, serverErrors int64
	byCode                     sync.Map // answer -> *atomic.Int64
	firstFailure               atomic.Value
	took                       time.Duration
}

func (r *floodResult) String() string {
	var codes []string
	r.byCode.Range(func(k, v any) bool {
		codes = append(codes, fmt.Sprintf("%s: %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	first, _ := r.firstFailure.Load().(string)
	return fmt.Sprintf("%d requests in %v (%.0f/s): %d failed, %d server errors; answers %s; first failure %q",
		r.sent, r.took.Round(time.Millisecond), float64(r.sent)/r.took.Seconds(), r.failed, r.serverErrors, strings.Join(codes, ", "), first)
}

// floodRequest is one malformed request of the flood, i of n.
func floodRequest(ctx context.Context, base string, i int, token string) *http.Request {
	const attach = "agentrunner.service.v1.RunnerService/AttachRun"
	const getSession = "agentrunner.service.v1.SessionService/GetSession"
	body, ct, path := stressBody, "application/connect+proto", attach
	switch i % 8 {
	case 1: // a well-formed envelope whose JSON does not decode
		body, ct = envelope(0, []byte(`{"runId": 7}`)), "application/connect+json"
	case 2: // gRPC-Web with a second, malformed envelope
		ct = "application/grpc-web+proto"
	case 3: // an envelope that announces more than follows
		body = []byte("\x00\x00\x00\x10\x00{}")
	case 4: // a unary call whose JSON does not decode
		body, ct, path = []byte(`{"appName": 1`), "application/json", getSession
	case 5: // compressed, but not gzip
		body = envelope(1, []byte("not gzip at all"))
	case 6: // well-formed, for a run nobody has, with 1 ms to answer
		body = envelope(0, []byte("\x0a\x07missing"))
	case 7: // well-formed unary JSON, for a session nobody has
		body, ct, path = []byte(`{"appName":"demo","userId":"alice","sessionId":"none"}`), "application/json", getSession
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Connect-Protocol-Version", "1")
	req.Header.Set("Connect-Timeout-Ms", "1")
	if i%8 == 5 {
		req.Header.Set("Connect-Content-Encoding", "gzip")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

func envelope(flags byte, msg []byte) []byte {
	out := make([]byte, 5, 5+len(msg))
	out[0] = flags
	binary.BigEndian.PutUint32(out[1:], uint32(len(msg)))
	return append(out, msg...)
}

// flood sends n requests from 32 workers and classifies the answers: a
// request that gets no answer (connection refused or reset: the process
// died) is a failure, a 5xx or an Internal, Unknown or DataLoss in the
// protocol is a server error.
func flood(ctx context.Context, base string, n int, token string) *floodResult {
	res := &floodResult{}
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}, Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n) && ctx.Err() == nil; i = next.Add(1) {
				atomic.AddInt64(&res.sent, 1)
				answer, err := send(c, floodRequest(ctx, base, int(i), token))
				if err != nil {
					atomic.AddInt64(&res.failed, 1)
					res.firstFailure.CompareAndSwap(nil, err.Error())
					continue
				}
				if isServerError(answer) {
					atomic.AddInt64(&res.serverErrors, 1)
					res.firstFailure.CompareAndSwap(nil, answer)
				}
				v, _ := res.byCode.LoadOrStore(answer, new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
			}
		})
	}
	wg.Wait()
	res.took = time.Since(start)
	return res
}

// send makes one request and returns its answer as "HTTP status/code".
func send(c *http.Client, req *http.Request) (string, error) {
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d/%s", resp.StatusCode, rpcCode(resp, body)), nil
}

// rpcCode finds the RPC's code in an answer of any protocol.
func rpcCode(resp *http.Response, body []byte) string {
	if s := resp.Header.Get("Grpc-Status"); s != "" {
		return "grpc-status " + s
	}
	if s := resp.Trailer.Get("Grpc-Status"); s != "" {
		return "grpc-status " + s
	}
	if _, after, ok := bytes.Cut(body, []byte(`"code":"`)); ok {
		if code, _, ok := bytes.Cut(after, []byte(`"`)); ok {
			return string(code)
		}
	}
	return "-"
}

func isServerError(answer string) bool {
	status, code, _ := strings.Cut(answer, "/")
	// A 504 deadline_exceeded is the caller's 1 ms running out.
	if n, _ := strconv.Atoi(status); n >= 500 && code != "deadline_exceeded" {
		return true
	}
	switch code {
	case "internal", "unknown", "data_loss", "grpc-status 2", "grpc-status 13", "grpc-status 15":
		return true
	}
	return false
}
