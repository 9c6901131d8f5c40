package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// traceAppsYAML is an app (waiter) whose runs wait on a call the caller
// executes when asked to "call lookup {}", one (slowly) whose runs last
// about three seconds, streamed, and one (traced) whose run takes every kind of step the trace
// draws, priced (clerk's model) and not (router's): a parallel step (fanout's two branches), a tool (clerk's MCP
// order_status), a transfer (router to helpdesk) and a remote agent
// (helpdesk: another agentrunner's support app, over A2A); and an agent
// it never visits (archivist).
func traceAppsYAML(t *testing.T, remoteConsole string) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`
models:
  - name: priced
    provider: offline
    price: {currency: USD, input: 0.30, output: 2.50}
  - name: slow-offline
    provider: offline
    offline: { first_chunk_delay: 1500ms, chunk_delay: 300ms, chunks: 5 }
apps:
  - name: waiter
    function_tools:
      - name: lookup
        description: Looks a thing up at the caller's.
        parameters: {type: object}
    root_agent:
      name: asker
      llm: {model: offline, tools: [lookup]}
  - name: slowly
    root_agent:
      name: slowpoke
      llm: {model: slow-offline}
  - name: traced
    mcp_servers:
      - { name: shop, command: %q, args: [mcp-demo] }
    root_agent:
      name: fanout
      description: Asks the clerk and the router at once.
      parallel: {}
      sub_agents:
        - name: clerk
          description: Looks orders up.
          llm: {model: priced, mcp: [{server: shop}], disallow_transfer_to_parent: true, disallow_transfer_to_peers: true}
        - name: router
          description: Hands questions to the help desk.
          llm: {model: offline, disallow_transfer_to_parent: true, disallow_transfer_to_peers: true}
          sub_agents:
            - name: helpdesk
              description: The support team's agent.
              remote_a2a: {card_url: %q, timeout: 30s}
            - name: archivist
              description: Digs in the archive; this run never asks it.
              llm: {model: offline}
`, self, remoteConsole+"a2a/support")
}

const traceMessage = `transfer to helpdesk and call order_status {"order_id": "42"}`

// startTraced serves the traced app (and the remote it calls), runs
// traceMessage once, and returns the server's address, console URL and
// the run's record.
func startTraced(t *testing.T, args ...string) (addr, console string, run *agentrunnerv1.Run, stop func()) {
	t.Helper()
	_, remoteConsole, _, _ := startConsole(t)
	cfg := writeFile(t, filepath.Join(t.TempDir(), "apps.yaml"), traceAppsYAML(t, remoteConsole))
	addr, console, _, stop = startConsole(t, append([]string{"--config", cfg}, args...)...)
	rc, sc := servicev1.NewRunnerServiceClient(dial(t, addr)), servicev1.NewSessionServiceClient(dial(t, addr))
	sess, err := sc.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "traced", UserId: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := rc.Run(t.Context(), &servicev1.RunRequest{AppName: "traced", UserId: "u1", SessionId: sess.GetSession().GetSessionId(), NewMessage: userText(traceMessage)})
	if err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			break
		}
		if r := resp.GetRun(); r != nil {
			run = r
		}
	}
	if run.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("traced run ended %v (%v)", run.GetStatus(), run.GetError())
	}
	return addr, console, run, stop
}

// spanReceiver is a local OTLP/HTTP trace receiver that keeps the spans
// it is sent.
type spanReceiver struct {
	mu    sync.Mutex
	spans []*tracev1.Span
}

func (r *spanReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var export collectortrace.ExportTraceServiceRequest
	if err == nil && req.URL.Path == "/v1/traces" {
		err = proto.Unmarshal(body, &export)
	}
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range export.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// runTree lists the spans of a run's span and under it as the paths of
// their names from it, sorted.
func (r *spanReceiver) runTree(runID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	byID := map[string]*tracev1.Span{}
	var root *tracev1.Span
	for _, s := range r.spans {
		byID[string(s.GetSpanId())] = s
		for _, kv := range s.GetAttributes() {
			if kv.GetKey() == "agentrunner.run.id" && kv.GetValue().GetStringValue() == runID {
				root = s
			}
		}
	}
	var out []string
	for _, s := range r.spans {
		path := []string{}
		for p := s; p != nil; p = byID[string(p.GetParentSpanId())] {
			path = append([]string{p.GetName()}, path...)
			if p == root {
				out = append(out, strings.Join(path, " / "))
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// traceTree lists a GetRunTrace answer's spans as the paths of their names
// from the run's, sorted.
func traceTree(spans []*agentrunnerv1.TraceSpan) []string {
	byID := map[string]*agentrunnerv1.TraceSpan{}
	for _, s := range spans {
		byID[s.GetSpanId()] = s
	}
	var out []string
	for _, s := range spans {
		path := []string{}
		for p := s; p != nil; p = byID[p.GetParentSpanId()] {
			path = append([]string{p.GetName()}, path...)
		}
		out = append(out, strings.Join(path, " / "))
	}
	slices.Sort(out)
	return out
}

// TestTraceMatchesExportedSpans: the console's trace of a run
// (GetRunTrace) and the OpenTelemetry spans the server exports over OTLP
// for it name the same steps, nested the same way: the run, the parallel
// agent and its two branches, the model calls, the MCP tool, the transfer
// and the remote agent it went to.
func TestTraceMatchesExportedSpans(t *testing.T) {
	recv := &spanReceiver{}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	addr, _, run, stop := startTraced(t)
	rc := servicev1.NewRunnerServiceClient(dial(t, addr))
	got, err := rc.GetRunTrace(t.Context(), &servicev1.GetRunTraceRequest{RunId: run.GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	// A run waiting on a call the caller executes.
	waiting := waitOnLookup(t, addr)
	waitTrace, err := rc.GetRunTrace(t.Context(), &servicev1.GetRunTraceRequest{RunId: waiting.GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	stop() // flushes the exporter
	console, exported := traceTree(got.GetSpans()), recv.runTree(run.GetRunId())
	want := []string{
		"invoke_agent traced",
		"invoke_agent traced / invoke_agent fanout",
		"invoke_agent traced / invoke_agent fanout / invoke_agent clerk",
		"invoke_agent traced / invoke_agent fanout / invoke_agent clerk / chat offline:priced",
		"invoke_agent traced / invoke_agent fanout / invoke_agent clerk / chat offline:priced",
		"invoke_agent traced / invoke_agent fanout / invoke_agent clerk / execute_tool order_status",
		"invoke_agent traced / invoke_agent fanout / invoke_agent router",
		"invoke_agent traced / invoke_agent fanout / invoke_agent router / chat offline",
		"invoke_agent traced / invoke_agent fanout / invoke_agent router / execute_tool transfer_to_agent",
		"invoke_agent traced / invoke_agent fanout / invoke_agent router / invoke_agent helpdesk",
	}
	if !slices.Equal(console, want) {
		t.Errorf("GetRunTrace spans:\n%s\nwant\n%s", strings.Join(console, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(exported, console) {
		t.Errorf("exported spans:\n%s\nGetRunTrace spans:\n%s", strings.Join(exported, "\n"), strings.Join(console, "\n"))
	}
	console, exported = traceTree(waitTrace.GetSpans()), recv.runTree(waiting.GetRunId())
	if !slices.Equal(exported, console) || !slices.Contains(console, "invoke_agent waiter / invoke_agent asker / execute_tool lookup") {
		t.Errorf("the waiting run's exported spans:\n%s\nGetRunTrace spans:\n%s", strings.Join(exported, "\n"), strings.Join(console, "\n"))
	}
	for _, s := range waitTrace.GetSpans() {
		if s.GetName() == "execute_tool lookup" && (!s.GetWaiting() || !s.GetOpen() || s.GetCallId() != waiting.GetPendingCallIds()[0]) {
			t.Errorf("the waiting call's span %v, want it open and waiting", s)
		}
	}
}

// waitOnLookup runs the waiter app until it waits on its lookup call.
func waitOnLookup(t *testing.T, addr string) *agentrunnerv1.Run {
	t.Helper()
	rc, sc := servicev1.NewRunnerServiceClient(dial(t, addr)), servicev1.NewSessionServiceClient(dial(t, addr))
	sess, err := sc.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "waiter", UserId: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := rc.Run(t.Context(), &servicev1.RunRequest{AppName: "waiter", UserId: "u1", SessionId: sess.GetSession().GetSessionId(), NewMessage: userText("call lookup {}")})
	if err != nil {
		t.Fatal(err)
	}
	var rec *agentrunnerv1.Run
	for {
		resp, err := stream.Recv()
		if err != nil {
			break
		}
		if r := resp.GetRun(); r != nil {
			rec = r
		}
	}
	if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED || len(rec.GetPendingCallIds()) != 1 {
		t.Fatalf("the waiter's run ended %v waiting on %v; want INPUT_REQUIRED on its lookup call", rec.GetStatus(), rec.GetPendingCallIds())
	}
	return rec
}
