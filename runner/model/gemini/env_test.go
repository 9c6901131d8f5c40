package gemini

import (
	"testing"

	"google.golang.org/genai"

	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

func TestCredentialsFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{name: "nothing", want: false},
		{name: "GOOGLE_API_KEY", env: map[string]string{"GOOGLE_API_KEY": "k"}, want: true},
		{name: "GEMINI_API_KEY", env: map[string]string{"GEMINI_API_KEY": "k"}, want: true},
		{name: "vertex with project", env: map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-central1"}, want: true},
		{name: "vertex with project, no location", env: map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "1", "GOOGLE_CLOUD_PROJECT": "p"}, want: true},
		{name: "enterprise with project", env: map[string]string{"GOOGLE_GENAI_USE_ENTERPRISE": "TRUE", "GOOGLE_CLOUD_PROJECT": "p"}, want: true},
		{name: "vertex without project", env: map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_LOCATION": "us-central1"}, want: false},
		{name: "project without vertex", env: map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "false", "GOOGLE_CLOUD_PROJECT": "p"}, want: false},
		{name: "base URL alone", env: map[string]string{"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:1"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearGenaiEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			if got := CredentialsFromEnv(); got != tt.want {
				t.Errorf("CredentialsFromEnv() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNewFromEnv checks that New with no options takes the API key and the
// base URL from the environment, as a deployment would.
func TestNewFromEnv(t *testing.T) {
	fake := newFakeGemini(t, unary(okBody))
	t.Setenv("GEMINI_API_KEY", "env-key")
	t.Setenv("GOOGLE_GEMINI_BASE_URL", fake.URL)

	m, err := New(t.Context(), "gemini-env")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if m.Name() != "gemini-env" {
		t.Errorf("Name() = %q", m.Name())
	}
	pt.Collect(t, m.Generate(t.Context(), pt.HelloRequest(), false))
	got := fake.Only(t)
	if apiKey(got) != "env-key" || got.Path != "/v1beta/models/gemini-env:generateContent" {
		t.Errorf("request key %q path %q, want env-key and the env model", apiKey(got), got.Path)
	}
}

func TestNewErrors(t *testing.T) {
	clearGenaiEnv(t)
	if _, err := New(t.Context(), "gemini-test"); err == nil {
		t.Error("New without credentials: no error")
	}
	if _, err := New(t.Context(), "", WithClientConfig(genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI})); err == nil {
		t.Error("New with an empty model name: no error")
	}
}

// TestWithClient checks that a caller-made client is used as is.
func TestWithClient(t *testing.T) {
	fake := newFakeGemini(t, unary(okBody))
	cc := genai.ClientConfig{APIKey: "own-key", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: fake.URL}}
	client, err := genai.NewClient(t.Context(), &cc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(t.Context(), "gemini-test", WithClient(client))
	if err != nil {
		t.Fatal(err)
	}
	pt.Collect(t, m.Generate(t.Context(), pt.HelloRequest(), false))
	if got := apiKey(fake.Only(t)); got != "own-key" {
		t.Errorf("api key %q, want own-key", got)
	}
}
