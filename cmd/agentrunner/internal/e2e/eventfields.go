package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/proto"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// groundedChunks are the two chunks of a streamed Gemini answer that
// carries everything an event keeps: a citation, grounding, the finish
// reason, the model version and usage with its details.
var groundedChunks = []map[string]any{
	{
		"candidates": []any{map[string]any{
			"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": "agentrunner serves "}}},
			// The Gemini API's name for citations; the SDK renames it.
			"citationMetadata": map[string]any{"citationSources": []any{map[string]any{
				"startIndex": 0, "endIndex": 11, "uri": "https://example.com/agentrunner", "license": "Apache-2.0",
			}}},
		}},
		"modelVersion": "fake-gemini-002",
	},
	{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"text": "agents over gRPC."}}},
			"finishReason": "STOP",
			"groundingMetadata": map[string]any{
				"webSearchQueries": []any{"what is agentrunner"},
				"groundingChunks":  []any{map[string]any{"web": map[string]any{"uri": "https://example.com/agentrunner", "title": "agentrunner"}}},
				"groundingSupports": []any{map[string]any{
					"segment":               map[string]any{"startIndex": 0, "endIndex": 35, "text": "agentrunner serves agents over gRPC."},
					"groundingChunkIndices": []any{0},
				}},
			},
		}},
		"modelVersion": "fake-gemini-002",
		"usageMetadata": map[string]any{
			"promptTokenCount": 12, "candidatesTokenCount": 8, "totalTokenCount": 20,
			"promptTokensDetails":     []any{map[string]any{"modality": "TEXT", "tokenCount": 12}},
			"candidatesTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": 8}},
			"trafficType":             "ON_DEMAND",
		},
	},
}

// fakeGroundedGemini answers the first streamed call with groundedChunks
// and cuts the second off after its first chunk, as a dropped connection
// does.
func fakeGroundedGemini(t *testing.T) *httptest.Server {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if !strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
			http.Error(w, `{"error":{"code":400,"message":"fake: stream only","status":"INVALID_ARGUMENT"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunks := groundedChunks
		if calls.Add(1) > 1 {
			chunks = []map[string]any{{"candidates": []any{map[string]any{
				"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": "Half an ans"}}},
			}}}}
		}
		for _, c := range chunks {
			b, err := json.Marshal(c)
			if err != nil {
				panic(err)
			}
			fmt.Fprintf(w, "data: %s\r\n\r\n", b)
			w.(http.Flusher).Flush()
		}
		if calls.Load() > 1 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close() // no end of the chunked body: the stream is cut
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// eventsKeepWhatTheModelReturns: through the real server and the real
// genai SDK against a fake Gemini API, the complete event of a streamed
// answer carries the finish reason, model version, citations, grounding
// and usage details, and the stored event is the one streamed. An answer
// cut off mid-stream is stored as far as it got, marked interrupted.
func eventsKeepWhatTheModelReturns(t *testing.T, tg Target) {
	fake := fakeGroundedGemini(t)
	t.Setenv("AGENTRUNNER_TEST_GEMINI_KEY", "fake-key")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "apps.yaml")
	config := fmt.Sprintf(`models:
  - name: g
    provider: gemini
    model: gemini-fake
    base_url: %s
    api_key_env: AGENTRUNNER_TEST_GEMINI_KEY
    retry: { max_attempts: 1 }
apps:
  - name: grounded
    root_agent: { name: researcher, llm: { model: g } }
`, fake.URL)
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := tg.Serve(t, "--data", filepath.Join(dir, "a.db"), "--config", cfg)
	rc, sessions := srv.Runner(), srv.Sessions()
	if _, err := sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "grounded", UserId: "u", SessionId: "s"}); err != nil {
		t.Fatal(err)
	}

	answer := completeModelEvent(t, rc, "what is agentrunner?")
	checkGrounded(t, answer)
	cut := completeModelEvent(t, rc, "again")
	if !cut.GetInterrupted() || cut.GetErrorCode() != model.CodeUnavailable || TextOfEvent(cut) != "Half an ans" {
		t.Errorf("cut-off answer: interrupted %v, code %q, text %q; want interrupted UNAVAILABLE with the streamed text",
			cut.GetInterrupted(), cut.GetErrorCode(), TextOfEvent(cut))
	}

	got, err := sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "grounded", UserId: "u", SessionId: "s"})
	if err != nil {
		t.Fatal(err)
	}
	stored := got.GetEvents()
	if len(stored) != 4 || !proto.Equal(stored[1], answer) || !proto.Equal(stored[3], cut) {
		t.Fatalf("stored events differ from the streamed ones:\n%v\nstreamed:\n%v\n%v", stored, answer, cut)
	}
	srv.Stop(t)
}

// completeModelEvent runs msg with streaming on and returns the one
// complete event the agent produced, having seen at least one partial.
func completeModelEvent(t *testing.T, rc servicev1.RunnerServiceClient, msg string) *agentrunnerv1.Event {
	t.Helper()
	stream, err := rc.Run(t.Context(), &servicev1.RunRequest{AppName: "grounded", UserId: "u", SessionId: "s",
		NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: msg}}}},
		RunConfig:  &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}})
	if err != nil {
		t.Fatal(err)
	}
	var (
		complete []*agentrunnerv1.Event
		partials int
	)
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("run %q: %v", msg, err)
		}
		if e := resp.GetError(); e != nil {
			t.Fatalf("run %q: in-band error %v", msg, e)
		}
		switch ev := resp.GetEvent(); {
		case ev == nil || ev.GetAuthor() == "user":
		case ev.GetPartial():
			partials++
		default:
			complete = append(complete, ev)
		}
	}
	if len(complete) != 1 || partials == 0 {
		t.Fatalf("run %q: %d complete events and %d partials, want 1 and some", msg, len(complete), partials)
	}
	return complete[0]
}

func checkGrounded(t *testing.T, ev *agentrunnerv1.Event) {
	t.Helper()
	if ev.GetFinishReason() != "STOP" || ev.GetModelVersion() != "fake-gemini-002" || ev.GetInterrupted() || ev.GetErrorCode() != "" {
		t.Errorf("finish %q, version %q, interrupted %v, error %q", ev.GetFinishReason(), ev.GetModelVersion(), ev.GetInterrupted(), ev.GetErrorCode())
	}
	if text := TextOfEvent(ev); text != "agentrunner serves agents over gRPC." {
		t.Errorf("text %q", text)
	}
	wantCitation := &agentrunnerv1.Citation{StartIndex: 0, EndIndex: 11, Uri: "https://example.com/agentrunner", License: "Apache-2.0"}
	if cs := ev.GetCitationMetadata().GetCitations(); len(cs) != 1 || !proto.Equal(cs[0], wantCitation) {
		t.Errorf("citations %v, want %v", cs, wantCitation)
	}
	g := ev.GetGroundingMetadata().AsMap()
	queries, _ := g["webSearchQueries"].([]any)
	chunks, _ := g["groundingChunks"].([]any)
	supports, _ := g["groundingSupports"].([]any)
	if len(queries) != 1 || queries[0] != "what is agentrunner" || len(chunks) != 1 || len(supports) != 1 {
		t.Errorf("grounding metadata %v", g)
	}
	u := ev.GetUsageMetadata()
	wantUsage := &agentrunnerv1.UsageMetadata{PromptTokenCount: 12, CandidatesTokenCount: 8, TotalTokenCount: 20,
		PromptTokensDetails:     []*agentrunnerv1.ModalityTokenCount{{Modality: "TEXT", TokenCount: 12}},
		CandidatesTokensDetails: []*agentrunnerv1.ModalityTokenCount{{Modality: "TEXT", TokenCount: 8}},
		TrafficType:             "ON_DEMAND"}
	if !proto.Equal(u, wantUsage) {
		t.Errorf("usage %v, want %v", u, wantUsage)
	}
}

// TextOfEvent is the text of ev's parts, joined.
func TextOfEvent(ev *agentrunnerv1.Event) string {
	var b strings.Builder
	for _, p := range ev.GetContent().GetParts() {
		b.WriteString(p.GetText())
	}
	return b.String()
}
