package apps

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
)

// geminiNames is the check the server passes: names starting "gemini-".
var geminiNames = UndeclaredModels(func(n string) bool { return strings.HasPrefix(n, "gemini-") }, "a Gemini model name")

const modelsDoc = `models:
  - name: gpt
    provider: openai
    model: gpt-4o
    api_key_env: OPENAI_API_KEY
    timeout: 60s
    retry: { max_attempts: 4, initial_backoff: 500ms }
    fallbacks: [claude]
  - name: claude
    provider: anthropic
    model: claude-sonnet-4-5
  - name: local
    provider: openai
    base_url: http://127.0.0.1:11434/v1/
apps:
  - name: a
    root_agent:
      name: r
      llm: { model: gpt }
      sub_agents:
        - { name: s, llm: { model: gemini-2.5-flash } }
        - { name: t, llm: { model: offline } }
`

func TestParseModels(t *testing.T) {
	cfg, err := Parse("apps.yaml", []byte(modelsDoc), geminiNames)
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.GetModels()[0]; m.GetProvider() != "openai" || m.GetRetry().GetMaxAttempts() != 4 || m.GetFallbacks()[0] != "claude" {
		t.Errorf("models[0] = %v", m)
	}
}

func TestParseModelErrors(t *testing.T) {
	tests := []struct {
		name, from, to string
		want           []string
	}{
		{"undeclared model", "model: gpt }", "model: gpt-4o }",
			[]string{"apps.yaml:19", "apps[0].root_agent.llm.model", `model "gpt-4o" is not declared in models`, "provider: openai"}},
		{"unknown provider", "provider: anthropic", "provider: anthropics",
			[]string{"apps.yaml:10", "models[1].provider", `unknown provider "anthropics"`}},
		{"unknown fallback", "fallbacks: [claude]", "fallbacks: [claud]",
			[]string{"apps.yaml:8", "models[0].fallbacks[0]", `no model "claud"`}},
		{"own fallback", "fallbacks: [claude]", "fallbacks: [gpt]",
			[]string{"models[0].fallbacks[0]", "its own fallback"}},
		{"bad timeout", "timeout: 60s", "timeout: 60m0",
			[]string{"apps.yaml:6", "models[0].timeout", "Go duration"}},
		{"bad idle timeout", "timeout: 60s", "timeout: 60s\n    idle_timeout: soon",
			[]string{"apps.yaml:7", "models[0].idle_timeout", "Go duration"}},
		{"bad backoff", "initial_backoff: 500ms", "initial_backoff: fast",
			[]string{"models[0].retry.initial_backoff", "Go duration"}},
		{"a key instead of its variable", "api_key_env: OPENAI_API_KEY", "api_key_env: sk-proj-abc",
			[]string{"apps.yaml:5", "models[0].api_key_env", "looks like an OpenAI API key"}},
		{"bad base URL", "base_url: http://127.0.0.1:11434/v1/", "base_url: 127.0.0.1:11434",
			[]string{"models[2].base_url", "http or https URL"}},
		{"duplicate name", "name: local", "name: claude",
			[]string{"models[2].name", `duplicate model name "claude"`}},
		{"reserved name", "name: local", "name: offline",
			[]string{"models[2].name", "reserved"}},
		{"missing provider", "    provider: openai\n    base_url", "    base_url",
			[]string{"models[2].provider", `unknown provider ""`}},
		{"offline pace on another provider", "model: claude-sonnet-4-5", "model: claude-sonnet-4-5\n    offline: { chunk_delay: 1s }",
			[]string{"models[1].offline", `only for provider "offline"`}},
		{"bad offline delay", "    provider: openai\n    base_url: http://127.0.0.1:11434/v1/", "    provider: offline\n    offline: { first_chunk_delay: soon }",
			[]string{"models[2].offline.first_chunk_delay", "Go duration"}},
		{"negative offline chunks", "    provider: openai\n    base_url: http://127.0.0.1:11434/v1/", "    provider: offline\n    offline: { chunks: -2 }",
			[]string{"models[2].offline.chunks", "negative"}},
		{"bad cache ttl", "  - name: a\n", "  - name: a\n    context_cache: { ttl: soon }\n",
			[]string{"apps.yaml:17", "apps[0].context_cache.ttl", "positive duration"}},
		{"negative cache intervals", "  - name: a\n", "  - name: a\n    context_cache: { cache_intervals: -1 }\n",
			[]string{"apps[0].context_cache.cache_intervals", "negative"}},
		{"negative cache min tokens", "  - name: a\n", "  - name: a\n    context_cache: { min_tokens: -5 }\n",
			[]string{"apps[0].context_cache.min_tokens", "negative"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(modelsDoc, tc.from, tc.to, 1)
			if doc == modelsDoc {
				t.Fatalf("%q is not in the document", tc.from)
			}
			_, err := Parse("apps.yaml", []byte(doc), geminiNames)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not an *Error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	// Without the check, any name is left to the model factory, as before.
	if _, err := Parse("apps.yaml", []byte(strings.Replace(modelsDoc, "model: gpt }", "model: m }", 1))); err != nil {
		t.Errorf("without UndeclaredModels: %v", err)
	}
}

// TestBuildWithoutCredentials: a model the factory finds no credentials
// for does not fail the build; the app is unavailable with the reason,
// and its agent's model fails every call saying what to set.
func TestBuildWithoutCredentials(t *testing.T) {
	cfg, err := Parse("apps.yaml", []byte(modelsDoc+`  - name: b
    root_agent: { name: r, llm: { model: offline } }
`), geminiNames)
	if err != nil {
		t.Fatal(err)
	}
	made := map[string]int{}
	factory := func(_ context.Context, name string) (model.Model, error) {
		made[name]++
		if name == "gpt" {
			return nil, &model.CredentialsError{Model: name, Provider: "openai", Set: "OPENAI_API_KEY"}
		}
		return offline.New(offline.Config{Name: name}), nil
	}
	built, err := Build(t.Context(), cfg, factory)
	if err != nil {
		t.Fatal(err)
	}
	if want := "model gpt (openai) needs OPENAI_API_KEY set"; built[0].Unavailable != want {
		t.Errorf("app a: Unavailable = %q, want %q", built[0].Unavailable, want)
	}
	if built[1].Unavailable != "" {
		t.Errorf("app b: Unavailable = %q, want it available", built[1].Unavailable)
	}
	if made["gpt"] != 1 {
		t.Errorf("factory asked for gpt %d times, want once", made["gpt"])
	}
	var stand model.Model = noCredentials{name: "gpt", err: &model.CredentialsError{Model: "gpt", Provider: "openai", Set: "OPENAI_API_KEY"}}
	next, stop := iter.Pull2(stand.Generate(t.Context(), &model.Request{}, false))
	defer stop()
	_, gerr, _ := next()
	var me *model.Error
	if !errors.As(gerr, &me) || me.Code != model.CodePermissionDenied || !strings.Contains(gerr.Error(), "OPENAI_API_KEY") {
		t.Errorf("stand-in call: %v", gerr)
	}
}

// A factory error other than missing credentials still fails the build,
// with the agent's path.
func TestBuildModelFactoryError(t *testing.T) {
	cfg, err := Parse("apps.yaml", []byte(modelsDoc), geminiNames)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(t.Context(), cfg, func(context.Context, string) (model.Model, error) { return nil, errors.New("boom") })
	if err == nil || !strings.Contains(err.Error(), "apps[0].root_agent") || !strings.Contains(err.Error(), "boom") {
		t.Errorf("Build = %v", err)
	}
}
