package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// aliceMarker is in alice's session (state, an event, an artifact): an
// answer to anyone but alice that holds it is a cross-user read.
const aliceMarker = "alice-only-7d1e9c"

// fuzzSeed is one well-formed request the campaign mutates.
type fuzzSeed struct {
	path string
	msg  proto.Message
}

// fuzzSeeds are requests for alice's session, her runs and her
// artifacts, and listings, over every service.
func fuzzSeeds() []fuzzSeed {
	const ss, rs, as = "agentrunner.service.v1.SessionService/", "agentrunner.service.v1.RunnerService/", "agentrunner.service.v1.ArtifactService/"
	sess := func() (string, string, string) { return "demo", "alice", "s-alice" }
	a, u, s := sess()
	return []fuzzSeed{
		{ss + "GetSession", &servicev1.GetSessionRequest{AppName: a, UserId: u, SessionId: s}},
		{ss + "ListEvents", &servicev1.ListEventsRequest{AppName: a, UserId: u, SessionId: s}},
		{ss + "ListSessions", &servicev1.ListSessionsRequest{AppName: a, UserId: u}},
		{ss + "ListSessions", &servicev1.ListSessionsRequest{AppName: a}},
		{ss + "ListToolCalls", &servicev1.ListToolCallsRequest{AppName: a, UserId: u, SessionId: s}},
		// Writes go to a session of their own, so that what the reads
		// return does not grow with the campaign.
		{ss + "CreateSession", &servicev1.CreateSessionRequest{AppName: a, UserId: u, SessionId: "s-writes", State: &structpb.Struct{Fields: map[string]*structpb.Value{"k": structpb.NewNumberValue(1)}}}},
		{ss + "AppendEvent", &servicev1.AppendEventRequest{AppName: a, UserId: u, SessionId: "s-writes", Event: &agentrunnerv1.Event{Author: "user", Content: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "fuzz"}}}}}}},
		{rs + "ListRuns", &servicev1.ListRunsRequest{AppName: a, UserId: u, SessionId: s}},
		{rs + "GetRun", &servicev1.GetRunRequest{RunId: "r-missing"}},
		{rs + "AttachRun", &servicev1.AttachRunRequest{RunId: "r-missing"}},
		{rs + "ListApps", &servicev1.ListAppsRequest{}},
		{as + "ListArtifacts", &servicev1.ListArtifactsRequest{AppName: a, UserId: u, SessionId: s}},
		{as + "LoadArtifact", &servicev1.LoadArtifactRequest{AppName: a, UserId: u, SessionId: s, Filename: "note.txt"}},
		{"agentrunner.service.v1.UsageService/GetUsage", &servicev1.GetUsageRequest{AppName: a, UserId: u}},
		{"grpc.health.v1.Health/Check", &servicev1.ListAppsRequest{}},
	}
}

// a2aSeeds are A2A calls over JSON-RPC and REST, as raw JSON bodies:
// a send (a run: the support app's offline model answers at once), a
// task lookup and a listing.
var a2aSeeds = []struct{ path, body string }{
	{"a2a/support/jsonrpc", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"where is order 7?"}]}}}`},
	{"a2a/support/jsonrpc", `{"jsonrpc":"2.0","id":"x","method":"GetTask","params":{"id":"t-missing","historyLength":3}}`},
	{"a2a/support/jsonrpc", `{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{"pageSize":5}}`},
	{"a2a/support/rest/message:send", `{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"data":{"order":7}}]}}`},
	{"a2a/support/rest/tasks/t-missing:cancel", `{}`},
}

// mutatedA2ARequest builds one A2A request from a seed, its JSON body
// mutated as mutateBody does.
func mutatedA2ARequest(ctx context.Context, rng *rand.Rand, base string, auth bool) (*http.Request, string) {
	seed := a2aSeeds[rng.IntN(len(a2aSeeds))]
	body := []byte(seed.body)
	for range rng.IntN(4) {
		body = mutateBody(rng, body)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+seed.path, bytes.NewReader(body))
	req.Header.Set("Content-Type", []string{"application/json", "application/a2a+json", "text/plain", ""}[rng.IntN(4)])
	who := ""
	if auth {
		switch rng.IntN(4) {
		case 0:
			req.Header.Set("Authorization", "Bearer alice-secret")
			who = "alice"
		case 1:
			req.Header.Set("Authorization", "Bearer bob-secret")
		case 2:
			req.Header.Set("Authorization", "Bearer nope")
		}
	}
	return req, who
}

// fuzzRequests is how many requests TestHTTPFuzzCampaign sends per mode:
// a few thousand in CI, AGENTRUNNER_HTTP_FUZZ_REQUESTS for a campaign.
func fuzzRequests(t *testing.T) int {
	return envCount(t, "AGENTRUNNER_HTTP_FUZZ_REQUESTS", 6000)
}

// TestHTTPFuzzCampaign sends mutated requests (bodies, framing,
// encodings, content types, timeouts, credentials) over Connect (JSON and
// proto, unary and streaming), gRPC-Web and A2A's JSON-RPC and REST,
// without and with an auth file. The server must stay up, answer none
// of them with a 5xx or an Internal, Unknown or DataLoss, and, with
// auth, show alice's data to nobody but alice.
func TestHTTPFuzzCampaign(t *testing.T) {
	n := fuzzRequests(t)
	dir := t.TempDir()
	authFile := writeFile(t, filepath.Join(dir, "auth.yaml"), `principals:
  - {name: alice, token_sha256: `+sha("alice-secret")+`, apps: ["*"], users: [self]}
  - {name: bob, token_sha256: `+sha("bob-secret")+`, apps: ["*"], users: [self]}
`)
	for _, mode := range []struct {
		name string
		args []string
	}{{"without auth", nil}, {"with auth", []string{"--auth-file", authFile}}} {
		t.Run(mode.name, func(t *testing.T) {
			addr, console, _, _ := startConsole(t, mode.args...)
			seedAlice(t, addr, mode.args != nil)
			res := fuzzHTTP(t.Context(), console, n, mode.args != nil, uint64(len(mode.name)))
			t.Logf("%s", res)
			if res.failed > 0 || res.serverErrors > 0 || res.crossUser > 0 {
				t.Fatalf("%s", res)
			}
		})
	}
}

// seedAlice stores alice's session, with the marker in its state, an
// event and an artifact, through the gRPC port.
func seedAlice(t *testing.T, addr string, auth bool) {
	t.Helper()
	ctx := t.Context()
	if auth {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer alice-secret")
	}
	conn := dial(t, addr)
	ss := servicev1.NewSessionServiceClient(conn)
	state := &structpb.Struct{Fields: map[string]*structpb.Value{"secret": structpb.NewStringValue(aliceMarker)}}
	if _, err := ss.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "demo", UserId: "alice", SessionId: "s-alice", State: state}); err != nil {
		t.Fatal(err)
	}
	ev := &agentrunnerv1.Event{Author: "user", Content: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: aliceMarker}}}}}
	if _, err := ss.AppendEvent(ctx, &servicev1.AppendEventRequest{AppName: "demo", UserId: "alice", SessionId: "s-alice", Event: ev}); err != nil {
		t.Fatal(err)
	}
	art := &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: aliceMarker}}
	if _, err := servicev1.NewArtifactServiceClient(conn).SaveArtifact(ctx, &servicev1.SaveArtifactRequest{AppName: "demo", UserId: "alice", SessionId: "s-alice", Filename: "note.txt", Artifact: art}); err != nil {
		t.Fatal(err)
	}
}

// fuzzResult counts a campaign's answers.
type fuzzResult struct {
	floodResult
	crossUser int64
}

func (r *fuzzResult) String() string {
	return fmt.Sprintf("%s; %d cross-user reads", r.floodResult.String(), r.crossUser)
}

// fuzzHTTP sends n mutated requests from 16 workers.
func fuzzHTTP(ctx context.Context, base string, n int, auth bool, seed uint64) *fuzzResult {
	res := &fuzzResult{}
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()
	seeds := fuzzSeeds()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := next.Add(1); i <= int64(n) && ctx.Err() == nil; i = next.Add(1) {
				req, who := mutatedRequest(ctx, rng, base, seeds[rng.IntN(len(seeds))], auth)
				if rng.IntN(5) == 0 {
					req, who = mutatedA2ARequest(ctx, rng, base, auth)
				}
				atomic.AddInt64(&res.sent, 1)
				answer, body, err := sendBody(c, req)
				if err != nil {
					atomic.AddInt64(&res.failed, 1)
					res.firstFailure.CompareAndSwap(nil, fmt.Sprintf("%v (%s %q)", err, req.URL.Path, req.Header))
					continue
				}
				if isServerError(answer) {
					atomic.AddInt64(&res.serverErrors, 1)
					var sent []byte
					if req.GetBody != nil {
						if rc, err := req.GetBody(); err == nil {
							sent, _ = io.ReadAll(rc)
						}
					}
					res.firstFailure.CompareAndSwap(nil, fmt.Sprintf("%s %s %q %q: %s", answer, req.URL.Path, req.Header, sent, body[:min(len(body), 300)]))
				}
				if auth && who != "alice" && bytes.Contains(body, []byte(aliceMarker)) {
					atomic.AddInt64(&res.crossUser, 1)
					res.firstFailure.CompareAndSwap(nil, "cross-user read by "+who+": "+req.URL.Path)
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

// mutatedRequest builds one request from seed: an encoding and a
// protocol, then a few mutations of the body and the headers. who is
// the principal its credentials name ("" for none or malformed ones).
func mutatedRequest(ctx context.Context, rng *rand.Rand, base string, seed fuzzSeed, auth bool) (*http.Request, string) {
	var body []byte
	protocols := []string{"application/json", "application/proto", "application/connect+json", "application/connect+proto", "application/grpc-web+proto", "application/grpc-web+json"}
	ct := protocols[rng.IntN(len(protocols))]
	if strings.Contains(ct, "json") {
		body, _ = protojson.Marshal(seed.msg)
	} else {
		body, _ = proto.Marshal(seed.msg)
	}
	if strings.HasPrefix(ct, "application/connect+") || strings.HasPrefix(ct, "application/grpc-web") {
		body = envelope(0, body)
	}
	for range rng.IntN(4) {
		body = mutateBody(rng, body)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+seed.path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Connect-Protocol-Version", "1")
	who := ""
	if auth {
		switch rng.IntN(6) {
		case 0, 1:
			req.Header.Set("Authorization", "Bearer alice-secret")
			who = "alice"
		case 2, 3:
			req.Header.Set("Authorization", "Bearer bob-secret")
		case 4:
			req.Header.Set("Authorization", []string{"Bearer", "Basic YWxpY2U6eA==", "Bearer alice-secret x", "bearer  ", "Bearer alice-secre"}[rng.IntN(5)])
		}
	}
	for range rng.IntN(3) {
		mutateHeaders(rng, req.Header)
	}
	if auth && len(req.Header.Values("Authorization")) != 1 {
		who = ""
	}
	return req, who
}

// mutateBody changes body one way: a flipped byte, a cut, an inserted
// run of bytes, a duplicate, or an envelope's flags.
func mutateBody(rng *rand.Rand, body []byte) []byte {
	if len(body) == 0 {
		return []byte{byte(rng.IntN(256))}
	}
	i := rng.IntN(len(body))
	switch rng.IntN(6) {
	case 0:
		body[i] ^= byte(1 << rng.IntN(8))
	case 1:
		return body[:i]
	case 2:
		ins := make([]byte, 1+rng.IntN(8))
		for k := range ins {
			ins[k] = byte(rng.IntN(256))
		}
		return append(body[:i:i], append(ins, body[i:]...)...)
	case 3:
		return append(body, body...)
	case 4:
		body[0] = []byte{0, 1, 2, 3, 0x80, 0xff}[rng.IntN(6)]
	case 5:
		return append(body, []byte(`{"a":NaN}`)...)
	}
	return body
}

// mutateHeaders changes one header that decides how the body is read.
func mutateHeaders(rng *rand.Rand, h http.Header) {
	switch rng.IntN(9) {
	case 0:
		h.Set("Connect-Timeout-Ms", []string{"1", "0", "-5", "abc", "99999999999", ""}[rng.IntN(6)])
	case 1:
		h.Set("Grpc-Timeout", []string{"1m", "soon", "999999999S", "5", "1H"}[rng.IntN(5)])
	case 2:
		h.Set("Content-Encoding", []string{"gzip", "br", "identity", "gzip, gzip"}[rng.IntN(4)])
	case 3:
		h.Set("Connect-Content-Encoding", []string{"gzip", "zstd", "identity"}[rng.IntN(3)])
	case 4:
		h.Set("Grpc-Encoding", []string{"gzip", "snappy"}[rng.IntN(2)])
	case 5:
		h.Set("Content-Type", []string{"application/connect+xml", "text/plain", "application/grpc", "application/json; charset=latin1", "application/grpc-web-text", ""}[rng.IntN(6)])
	case 6:
		h.Del("Connect-Protocol-Version")
	case 7:
		h.Add("Content-Type", "application/json")
	case 8:
		h.Add("Authorization", "Bearer bob-secret")
	}
}

// sendBody is send, keeping the body.
func sendBody(c *http.Client, req *http.Request) (string, []byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("%d/%s", resp.StatusCode, rpcCode(resp, buf.Bytes())), buf.Bytes(), nil
}
