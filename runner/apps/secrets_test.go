package apps

import (
	"strings"
	"testing"
)

// A secret pasted where the name of an environment variable goes is
// refused with its field and what it looks like, and never echoed.
func TestSecretInPlaceOfEnvName(t *testing.T) {
	const base = `models:
  - {name: m, provider: openai, base_url: "http://127.0.0.1:1/v1", api_key_env: KEY}
apps:
  - name: a
    mcp_servers:
      - {name: s, url: "http://127.0.0.1:1/mcp", header_env: ["Authorization=MCP_TOKEN"], }
    root_agent: {name: r, llm: {model: m}}
`
	tests := []struct {
		name, from, to, kind, field string
	}{
		{"gemini", "api_key_env: KEY", "api_key_env: AIzaSyD3xampleK3yThatIsLongEnough0123", "Gemini", "models[0].api_key_env"},
		{"openai", "api_key_env: KEY", "api_key_env: sk-proj-Secret0123456789", "OpenAI", "models[0].api_key_env"},
		{"anthropic", "api_key_env: KEY", "api_key_env: sk-ant-api03-Secret0123456789", "Anthropic", "models[0].api_key_env"},
		{"noise", "api_key_env: KEY", "api_key_env: q8Rt5ZkWm2Lp9XvB3nC7dF4hJ6", "API key or token", "models[0].api_key_env"},
		{"not a name", "api_key_env: KEY", "api_key_env: 'my key!Secret'", "name of an environment variable", "models[0].api_key_env"},
		{"number", "api_key_env: KEY", "api_key_env: 12345678901234", "want a string", "models[0].api_key_env"},
		{"header value", "Authorization=MCP_TOKEN", "Authorization=Bearer sk-Secret0123456789", "bearer token", "mcp_servers[0].header_env[0]"},
		{"header only", "Authorization=MCP_TOKEN", "Bearer Secret0123456789", "Header-Name=ENV_VAR", "mcp_servers[0].header_env[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(base, tt.from, tt.to, 1)
			_, err := Parse("apps.yaml", []byte(doc))
			if err == nil || !strings.Contains(err.Error(), tt.kind) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Parse = %v, want %s at %s", err, tt.kind, tt.field)
			}
			if strings.Contains(err.Error(), "Secret") || strings.Contains(err.Error(), "3xample") || strings.Contains(err.Error(), "q8Rt5") || strings.Contains(err.Error(), "12345678901234") {
				t.Fatalf("the value reached the error: %v", err)
			}
		})
	}
	if _, err := Parse("apps.yaml", []byte(base)); err != nil {
		t.Fatalf("names are refused: %v", err)
	}
}
