package providers

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// echoingAPI refuses every call with a 401 whose body repeats the key it
// was sent, as OpenAI's "Incorrect API key provided: sk-…" once did and
// as a careless proxy may.
func echoingAPI(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + r.Header.Get("X-Api-Key")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{
			"message": "Incorrect API key provided: " + key, "type": "authentication_error", "code": "invalid_api_key"}})
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestKeyNeverReported: whatever a provider's error body says, the key a
// model was given appears in none of its errors, in-band messages or the
// log lines of its retries.
func TestKeyNeverReported(t *testing.T) {
	url := echoingAPI(t)
	const key = "sk-ant-canary-4e1f9b2d7c0a"
	var logs bytes.Buffer
	f := New(Options{
		Models: []*agentrunnerv1.ModelConfig{
			{Name: "gpt", Provider: OpenAI, BaseUrl: url + "/v1/", ApiKeyEnv: "KEY", Retry: &agentrunnerv1.RetryConfig{MaxAttempts: 2, InitialBackoff: "1ms"}},
			{Name: "claude", Provider: Anthropic, BaseUrl: url, ApiKeyEnv: "KEY", Retry: &agentrunnerv1.RetryConfig{MaxAttempts: 2, InitialBackoff: "1ms"}},
		},
		Getenv: env(map[string]string{"KEY": key}),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	req := &model.Request{Contents: []*agentrunnerv1.Content{{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "hi"}}}}}}
	for _, name := range []string{"gpt", "claude"} {
		m, err := f.Model(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		var reported []string
		for resp, err := range m.Generate(t.Context(), req, false) {
			if err != nil {
				reported = append(reported, err.Error())
			}
			if resp != nil && resp.ErrorMessage != "" {
				reported = append(reported, resp.ErrorMessage)
			}
		}
		all := strings.Join(reported, "\n")
		if len(reported) == 0 || !strings.Contains(all, redactedKey) {
			t.Errorf("%s reported %q; want the refusal, with the key cut out", name, all)
		}
		if strings.Contains(all, key) {
			t.Errorf("%s reported its key: %q", name, all)
		}
	}
	if strings.Contains(logs.String(), key) {
		t.Errorf("the retries logged the key:\n%s", logs.String())
	}
}
