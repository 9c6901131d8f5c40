package main

import (
	"context"
	"google.golang.org/grpc/metadata"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

var metricsLine = regexp.MustCompile(`msg="metrics server" addr=(\S+)`)

// TestServeMetrics serves with --metrics-addr, runs a transfer (a tool
// call) and scrapes /metrics over HTTP for every metric the server keeps.
func TestServeMetrics(t *testing.T) {
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Setenv(k, "")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, exited, logs := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "db"), "--metrics-addr", "127.0.0.1:0")
	m := metricsLine.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no metrics address logged:\n%s", logs)
	}
	conn := dial(t, addr)
	if _, err := servicev1.NewSessionServiceClient(conn).CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "support", UserId: "u", SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	// A caller's trace context, as an instrumented client sends it: the
	// run's spans are children of a remote parent (no tracing is set up
	// here, so they are a no-op tracer's, which turns once panicked on).
	traced := metadata.AppendToOutgoingContext(t.Context(), "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate", "vendor=x")
	stream, err := servicev1.NewRunnerServiceClient(conn).Run(traced, &servicev1.RunRequest{AppName: "support", UserId: "u", SessionId: "s",
		NewMessage: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "please transfer to billing"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			if err != io.EOF {
				t.Fatalf("run: %v", err)
			}
			break
		}
		if e := resp.GetEvent(); e.GetErrorCode() != "" {
			t.Fatalf("run failed: %s %s", e.GetErrorCode(), e.GetErrorMessage())
		}
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	text := string(body)
	for _, name := range []string{
		"agentrunner_runs_started", "agentrunner_runs_ended", "agentrunner_run_duration", "agentrunner_runs_active", "agentrunner_run_queue_wait",
		"gen_ai_client_operation_duration", "gen_ai_client_token_usage", "agentrunner_tool_calls",
		"agentrunner_store_commit_duration", "agentrunner_store_commit_writes", "agentrunner_store_file_size",
		"rpc_server_call_duration",
	} {
		if !strings.Contains(text, "\n"+name) && !strings.HasPrefix(text, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if !regexp.MustCompile(`agentrunner_runs_ended\S*\{[^}]*agentrunner_run_status="succeeded"`).MatchString(text) {
		t.Errorf("no succeeded run counted:\n%s", grepLines(text, "agentrunner_runs_ended"))
	}
	if !regexp.MustCompile(`agentrunner_tool_calls\S*\{[^}]*gen_ai_tool_name="transfer_to_agent"`).MatchString(text) {
		t.Errorf("the transfer call is not counted:\n%s", grepLines(text, "agentrunner_tool_calls"))
	}
	cancel()
	if err := <-exited; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
