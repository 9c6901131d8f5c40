package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a local OTLP/HTTP trace receiver: it keeps the names of
// the spans it is sent.
type otlpReceiver struct {
	mu      sync.Mutex
	names   []string
	metrics []string
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err == nil && req.URL.Path == "/v1/metrics" {
		r.serveMetrics(w, body)
		return
	}
	if err != nil || req.URL.Path != "/v1/traces" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var export collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &export); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range export.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.names = append(r.names, s.GetName())
			}
		}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// TestServeExportsTraces serves with the standard OTLP environment set and
// checks that a run's spans, under the RPC's, and the metrics reach a local
// receiver by the time the server has shut down.
func TestServeExportsTraces(t *testing.T) {
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"} {
		t.Setenv(k, "")
	}
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, exited, _ := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "db"))
	conn := dial(t, addr)
	if _, err := servicev1.NewSessionServiceClient(conn).CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "support", UserId: "u", SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	stream, err := servicev1.NewRunnerServiceClient(conn).Run(t.Context(), &servicev1.RunRequest{AppName: "support", UserId: "u", SessionId: "s",
		NewMessage: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "hello"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
	cancel()
	if err := <-exited; err != nil {
		t.Fatalf("serve: %v", err)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, want := range []string{"agentrunner.runs.ended", "gen_ai.client.token.usage", "agentrunner.store.commit.duration"} {
		if !slices.Contains(recv.metrics, want) {
			t.Errorf("no metric %q exported among %q", want, recv.metrics)
		}
	}
	for _, want := range []string{"agentrunner.service.v1.RunnerService/Run", "invoke_agent support", "invoke_agent triage", "chat gemini-2.5-flash"} {
		if !slices.Contains(recv.names, want) && !(want == "chat gemini-2.5-flash" && slices.Contains(recv.names, "chat offline:gemini-2.5-flash")) {
			t.Errorf("no span %q among %q", want, recv.names)
		}
	}
}

// serveMetrics keeps the names of the metrics it is sent.
func (r *otlpReceiver) serveMetrics(w http.ResponseWriter, body []byte) {
	var export collectormetrics.ExportMetricsServiceRequest
	if err := proto.Unmarshal(body, &export); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rm := range export.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				r.metrics = append(r.metrics, m.GetName())
			}
		}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectormetrics.ExportMetricsServiceResponse{})
	_, _ = w.Write(out)
}
