package providers

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/retry"
)

// fakeAPI serves the OpenAI and Anthropic endpoints on 127.0.0.1: each
// answers with text naming the model it was asked for, or, while failing
// is above zero, with a 429. It records the credentials it was sent.
type fakeAPI struct {
	srv     *httptest.Server
	failing atomic.Int32
	calls   atomic.Int32
	auth    atomic.Value // string: the last Authorization or x-api-key
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(f.serve)}}
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	f.auth.Store(r.Header.Get("Authorization") + r.Header.Get("X-Api-Key"))
	var req struct {
		Model string `json:"model"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	w.Header().Set("Content-Type", "application/json")
	if f.failing.Add(-1) >= 0 {
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error": {"message": "slow down", "type": "rate_limit_error"}}`))
		return
	}
	text := "answer from " + req.Model
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}},
			"usage":   map[string]any{"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
		})
	case strings.HasSuffix(r.URL.Path, "/messages"):
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "m1", "type": "message", "role": "assistant", "model": req.Model, "stop_reason": "end_turn",
			"content": []any{map[string]any{"type": "text", "text": text}},
			"usage":   map[string]any{"input_tokens": 3, "output_tokens": 2},
		})
	default:
		http.NotFound(w, r)
	}
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func answer(t *testing.T, m model.Model) string {
	t.Helper()
	req := &model.Request{Contents: []*agentrunnerv1.Content{{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "hi"}}}}}}
	var out string
	for resp, err := range m.Generate(t.Context(), req, false) {
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		if resp.ErrorCode != "" {
			t.Fatalf("%s: in-band %s: %s", m.Name(), resp.ErrorCode, resp.ErrorMessage)
		}
		for _, p := range resp.Content.GetParts() {
			out += p.GetText()
		}
	}
	return out
}

// TestDeclaredModels makes each provider's model from a models entry and
// calls it through its real SDK against the fake API.
func TestDeclaredModels(t *testing.T) {
	api := newFakeAPI(t)
	base := api.srv.URL + "/v1/"
	f := New(Options{
		Models: []*agentrunnerv1.ModelConfig{
			{Name: "gpt", Provider: OpenAI, Model: "gpt-4o", BaseUrl: base, ApiKeyEnv: "MY_OPENAI_KEY"},
			{Name: "local", Provider: OpenAI, Model: "llama3", BaseUrl: base},
			{Name: "claude", Provider: Anthropic, Model: "claude-sonnet-4-5", BaseUrl: api.srv.URL},
			{Name: "canned", Provider: Offline},
		},
		Getenv: env(map[string]string{"MY_OPENAI_KEY": "sk-one", "ANTHROPIC_API_KEY": "sk-two"}),
	})
	tests := []struct{ name, want, auth string }{
		{"gpt", "answer from gpt-4o", "Bearer sk-one"},
		{"local", "answer from llama3", ""},
		{"claude", "answer from claude-sonnet-4-5", "sk-two"},
	}
	for _, tt := range tests {
		m, err := f.Model(t.Context(), tt.name)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := answer(t, m); got != tt.want {
			t.Errorf("%s answered %q, want %q", tt.name, got, tt.want)
		}
		if got := api.auth.Load(); got != tt.auth {
			t.Errorf("%s sent credentials %q, want %q", tt.name, got, tt.auth)
		}
	}
	m, err := f.Model(t.Context(), "canned")
	if err != nil || !strings.HasPrefix(answer(t, m), "offline model:") {
		t.Errorf("offline entry: %v", err)
	}
}

// TestMissingCredentials: a model whose key variable is unset is a
// CredentialsError saying what to set, found when the model is made.
func TestMissingCredentials(t *testing.T) {
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "")
	t.Setenv("GOOGLE_GENAI_USE_ENTERPRISE", "")
	f := New(Options{
		Models: []*agentrunnerv1.ModelConfig{
			{Name: "gpt", Provider: OpenAI},
			{Name: "azure", Provider: OpenAI, BaseUrl: "https://example.invalid/v1/", ApiKeyEnv: "AZURE_OPENAI_API_KEY"},
			{Name: "claude", Provider: Anthropic},
			{Name: "flash", Provider: Gemini, Model: "gemini-2.5-flash"},
			{Name: "with-fallback", Provider: Offline, Fallbacks: []string{"claude"}},
		},
		Getenv: env(nil),
	})
	tests := []struct{ name, set string }{
		{"gpt", "OPENAI_API_KEY"},
		{"azure", "AZURE_OPENAI_API_KEY"},
		{"claude", "ANTHROPIC_API_KEY"},
		{"flash", "GOOGLE_API_KEY or GEMINI_API_KEY"},
		{"gemini-2.5-pro", "GOOGLE_API_KEY or GEMINI_API_KEY"},
		{"with-fallback", "ANTHROPIC_API_KEY"},
	}
	for _, tt := range tests {
		_, err := f.Model(t.Context(), tt.name)
		var ce *model.CredentialsError
		if !errors.As(err, &ce) || !strings.Contains(ce.Set, tt.set) {
			t.Errorf("%s: error %v, want a CredentialsError saying to set %s", tt.name, err, tt.set)
		}
	}

	// The default apps' mode: a bare Gemini name runs offline instead.
	standIn, err := New(Options{OfflineFallback: true}).Model(t.Context(), "gemini-2.5-flash")
	if err != nil || standIn.Name() != "offline:gemini-2.5-flash" {
		t.Fatalf("offline fallback: %v, %v", standIn, err)
	}
}

// TestFallbackAnswers: the primary's retries are spent on 429s, and the
// declared fallback, another provider, answers.
func TestFallbackAnswers(t *testing.T) {
	primary, second := newFakeAPI(t), newFakeAPI(t)
	primary.failing.Store(1 << 20)
	f := New(Options{
		Models: []*agentrunnerv1.ModelConfig{
			{Name: "gpt", Provider: OpenAI, BaseUrl: primary.srv.URL + "/v1/", Retry: &agentrunnerv1.RetryConfig{MaxAttempts: 2, InitialBackoff: "1ms", MaxBackoff: "2ms"}, Fallbacks: []string{"claude"}},
			{Name: "claude", Provider: Anthropic, Model: "claude-haiku-4-5", BaseUrl: second.srv.URL, ApiKeyEnv: "K"},
		},
		Getenv: env(map[string]string{"K": "k"}),
	})
	m, err := f.Model(t.Context(), "gpt")
	if err != nil {
		t.Fatal(err)
	}
	if got := answer(t, m); got != "answer from claude-haiku-4-5" {
		t.Errorf("answered %q, want the fallback's answer", got)
	}
	if n := primary.calls.Load(); n < 2 {
		t.Errorf("primary called %d times, want its 2 attempts (the SDK may add its own)", n)
	}
	if n := second.calls.Load(); n != 1 {
		t.Errorf("fallback called %d times, want 1", n)
	}
}

func TestPolicy(t *testing.T) {
	p, err := Policy(&agentrunnerv1.ModelConfig{Timeout: "45s", Retry: &agentrunnerv1.RetryConfig{MaxAttempts: 5, InitialBackoff: "250ms", MaxBackoff: "4s", MaxElapsed: "1m"}})
	want := retry.Policy{MaxAttempts: 5, InitialBackoff: 250 * time.Millisecond, MaxBackoff: 4 * time.Second, MaxTotal: time.Minute, CallTimeout: 45 * time.Second}
	if err != nil || p != want {
		t.Errorf("Policy = %+v, %v; want %+v", p, err, want)
	}
	if _, err := Policy(&agentrunnerv1.ModelConfig{Timeout: "soon", Retry: &agentrunnerv1.RetryConfig{MaxBackoff: "-1s"}}); err == nil ||
		!strings.Contains(err.Error(), "timeout") || !strings.Contains(err.Error(), "retry.max_backoff") {
		t.Errorf("bad durations: %v", err)
	}
}

func TestIsGeminiName(t *testing.T) {
	for name, want := range map[string]bool{
		"gemini-2.5-flash": true, "models/gemini-2.0-pro": true, "projects/p/locations/l/endpoints/e": true, "gemma-3-27b-it": true,
		"gpt-4o": false, "claude-sonnet-4-5": false, "gemini": false, "m": false, "offline": false,
	} {
		if IsGeminiName(name) != want {
			t.Errorf("IsGeminiName(%q) = %v", name, !want)
		}
	}
}
