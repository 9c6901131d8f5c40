package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"google.golang.org/protobuf/types/known/structpb"
)

// stressBody is the reproducer of the HTTP listener's crash: a valid
// Connect envelope, then one whose flags (2, end of stream) no request
// may carry. vanguard's reader refused the second from grpc-go's reader
// goroutine by ending the response, while the handler, already returned
// (refused for want of credentials, or out of time), had grpc-go write
// the same response: a concurrent map write that stopped the process.
var stressBody = []byte("\x00\x00\x00\x00\x02{}\x02\x00\x00\x00\x02{}")

// stressRequests is how many requests TestHTTPListenerSurvivesFloods
// sends in all (a third per mode): 60,000 by default, ten times the
// median that killed main at 1dc16e9 (it died after 156 to 21,069
// answered requests, median about 3,000, over 23 rounds on this
// machine); AGENTRUNNER_HTTP_STRESS_REQUESTS sets it (750,000 gives each
// mode ten times the worst round).
func stressRequests(t *testing.T) int {
	return envCount(t, "AGENTRUNNER_HTTP_STRESS_REQUESTS", 60000)
}

// envCount is the count the environment variable name gives, or def.
func envCount(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a count", name, v)
	}
	return n
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

// TestJSONReadsOfUnmappableValues: a store written before the server
// refused them holds NaN, ±Infinity and a Value with no kind in a
// session's state, an event's state delta and a call's arguments. Every
// JSON read still answers (GetSession, ListEvents, a user's ListSessions
// and the listing of all users), with those values as JSON writes a
// double (the strings "NaN", "Infinity", "-Infinity") or null; it was a
// 500 "unknown" for the whole response.
func TestJSONReadsOfUnmappableValues(t *testing.T) {
	data := filepath.Join(t.TempDir(), "a.db")
	st, err := boltstore.Open(data, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := store.SessionKey{App: "demo", User: "alice", Session: "odd"}
	state := &structpb.Struct{Fields: map[string]*structpb.Value{
		"nan": structpb.NewNumberValue(math.NaN()), "ok": structpb.NewNumberValue(2),
	}}
	if _, err := st.CreateSession(t.Context(), k, state); err != nil {
		t.Fatal(err)
	}
	ev := &agentrunnerv1.Event{Author: "bot", InvocationId: "i1",
		Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{
			Id: "c1", Name: "f", Args: &structpb.Struct{Fields: map[string]*structpb.Value{"big": structpb.NewNumberValue(math.Inf(1)), "none": {}}}}}}}},
		Actions: &agentrunnerv1.EventActions{StateDelta: &structpb.Struct{Fields: map[string]*structpb.Value{"neg": structpb.NewNumberValue(math.Inf(-1))}}}}
	if _, err := st.AppendEvent(t.Context(), k, ev); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE", envConfig, envAuthFile, envHTTPPrefix} {
		t.Setenv(k, "")
	}
	ctx, cancel := context.WithCancel(t.Context())
	_, exited, logs := startRun(t, ctx, "--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--data", data)
	defer func() { cancel(); <-exited }()
	m := consoleLine.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no console URL:\n%s", logs)
	}
	const svc = "agentrunner.service.v1.SessionService/"
	for _, c := range []struct{ method, body string }{
		{"GetSession", `{"appName":"demo","userId":"alice","sessionId":"odd"}`},
		{"ListEvents", `{"appName":"demo","userId":"alice","sessionId":"odd"}`},
		{"ListSessions", `{"appName":"demo","userId":"alice"}`},
		{"ListSessions", `{"appName":"demo"}`},
	} {
		code, body := postJSON(t, http.DefaultClient, m[1]+svc+c.method, c.body, nil)
		if code != 200 {
			t.Errorf("%s %s: %d %s", c.method, c.body, code, body)
			continue
		}
		if c.method != "ListEvents" && !strings.Contains(body, `"nan":"NaN"`) {
			t.Errorf("%s %s: the state's NaN is not rendered: %s", c.method, c.body, body)
		}
		if c.method != "ListSessions" && (!strings.Contains(body, `"big":"Infinity"`) || !strings.Contains(body, `"neg":"-Infinity"`) || !strings.Contains(body, `"none":null`)) {
			t.Errorf("%s: the event's values are not rendered: %s", c.method, body)
		}
	}
}

// TestHTTPBadInputIsAClientError: what a client gets wrong on the HTTP
// listener is answered as the client's error (a 4xx, InvalidArgument or
// Unauthenticated first when credentials are missing), in the request's
// protocol, never a 5xx, Internal or Unknown; each case was a server
// error at 1dc16e9.
func TestHTTPBadInputIsAClientError(t *testing.T) {
	dir := t.TempDir()
	authFile := writeFile(t, filepath.Join(dir, "auth.yaml"), `principals:
  - {name: alice, token_sha256: `+sha("alice-secret")+`, apps: ["*"], users: [self]}
`)
	_, open, _, _ := startConsole(t)
	_, guarded, _, _ := startConsole(t, "--auth-file", authFile)
	gz := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write([]byte(s))
		_ = w.Close()
		return b.Bytes()
	}
	getSession := "agentrunner.service.v1.SessionService/GetSession"
	attach := "agentrunner.service.v1.RunnerService/AttachRun"
	for _, c := range []struct {
		name, base, path, ct string
		body                 []byte
		header               map[string]string
		want                 string
	}{
		{"a malformed Grpc-Timeout on a Connect call", open, listApps, "application/json", []byte(`{}`), map[string]string{"Grpc-Timeout": "soon"}, "400/invalid_argument"},
		{"a Connect body that is not the gzip it says", open, listApps, "application/json", []byte(`{}`), map[string]string{"Content-Encoding": "gzip"}, "400/invalid_argument"},
		{"a Connect proto body that is not the gzip it says", open, listApps, "application/proto", []byte("\x00"), map[string]string{"Content-Encoding": "gzip"}, "400/invalid_argument"},
		{"a gzip body that is gzip", open, listApps, "application/json", gz(`{}`), map[string]string{"Content-Encoding": "gzip"}, "200/-"},
		{"an empty JSON body on a unary call", open, listApps, "application/json", nil, nil, "400/invalid_argument"},
		{"a compressed envelope that is not gzip", open, attach, "application/connect+proto", envelope(1, []byte("nope")), map[string]string{"Connect-Content-Encoding": "gzip"}, "200/invalid_argument"},
		{"an envelope cut short", open, attach, "application/connect+proto", []byte("\x00\x00\x00"), nil, "200/invalid_argument"},
		{"an envelope announcing more than follows", open, attach, "application/connect+proto", []byte("\x00\x00\x00\x00\x09{}"), nil, "200/invalid_argument"},
		{"end-of-stream flags on a request", open, attach, "application/connect+proto", stressBody, nil, "200/invalid_argument"},
		{"two messages for one", open, attach, "application/connect+json", append(envelope(0, []byte(`{"runId":"r"}`)), envelope(0, []byte(`{}`))...), nil, "200/invalid_argument"},
		{"no message", open, attach, "application/connect+json", nil, nil, "200/invalid_argument"},
		{"JSON that does not decode, streaming", open, attach, "application/connect+json", envelope(0, []byte(`{"runId":7}`)), nil, "200/invalid_argument"},
		{"gRPC-Web with a malformed envelope", open, listApps, "application/grpc-web+proto", stressBody, nil, "200/grpc-status 3"},
		{"JSON that does not decode, unary", open, getSession, "application/json", []byte(`{"appName":`), nil, "400/invalid_argument"},
		{"no credentials and a malformed body", guarded, attach, "application/connect+proto", stressBody, nil, "200/unauthenticated"},
		{"no credentials and an empty unary body", guarded, listApps, "application/json", nil, nil, "401/unauthenticated"},
		{"credentials and a malformed body", guarded, attach, "application/connect+proto", stressBody, map[string]string{"Authorization": "Bearer alice-secret"}, "200/invalid_argument"},
		{"a wrong token", guarded, listApps, "application/json", []byte(`{}`), map[string]string{"Authorization": "Bearer nope"}, "401/unauthenticated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, c.base+c.path, bytes.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", c.ct)
			req.Header.Set("Connect-Protocol-Version", "1")
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			got, err := send(http.DefaultClient, req)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("answer %s, want %s", got, c.want)
			}
		})
	}
}

// TestA2ADataPartJSONCannotCarry: over A2A's gRPC binding, a data part
// holding NaN is refused as invalid before anything is stored; over the
// JSON bindings JSON cannot carry one at all.
func TestA2ADataPartJSONCannotCarry(t *testing.T) {
	addr, console, _, _ := startConsole(t)
	c, _ := a2aClient(t, console, "support", a2a.TransportProtocolGRPC)
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"order": "A-1", "weight": math.NaN()}))
	_, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m})
	if err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Fatalf("a data part with NaN over gRPC: %v; want it refused naming the NaN", err)
	}
	list, err := servicev1.NewSessionServiceClient(dial(t, addr)).ListSessions(t.Context(), &servicev1.ListSessionsRequest{AppName: "support"})
	if err != nil || len(list.GetSessions()) != 0 {
		t.Errorf("sessions after the refusal: %v, %v; want none", list.GetSessions(), err)
	}
}
