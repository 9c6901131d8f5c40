package apps

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/runner/model"
)

// webhookApps is an apps file whose app calls back url, signed with the
// secret in secretEnv.
func webhookApps(url, secretEnv string) string {
	return `
apps:
  - name: digest
    webhook: { url: "` + url + `", secret_env: "` + secretEnv + `" }
    root_agent: { name: root, llm: { model: offline, instruction: "digest" } }
`
}

var errHost = errors.New("host not allowed")

// onlyHooks allows hooks.example.com only, as serve's allow list would.
func onlyHooks(url string) error {
	if !strings.HasPrefix(url, "https://hooks.example.com/") {
		return errHost
	}
	return nil
}

// TestWebhookChecked: an app's webhook URL passes the server's check at
// load (with the file's line), its secret_env is a variable's name, and
// a built app carries both to its runs.
func TestWebhookChecked(t *testing.T) {
	cfg, err := Parse("apps.yaml", []byte(webhookApps("https://hooks.example.com/digest", "DIGEST_SECRET")), WebhookURLs(onlyHooks))
	if err != nil {
		t.Fatal(err)
	}
	built, err := Build(t.Context(), cfg, func(context.Context, string) (model.Model, error) { return namedModel("m"), nil })
	if err != nil {
		t.Fatal(err)
	}
	if a := built[0]; a.Webhook.GetUrl() != "https://hooks.example.com/digest" || a.WebhookSecretEnv != "DIGEST_SECRET" {
		t.Fatalf("built app's webhook = %v, secret env %q", a.Webhook, a.WebhookSecretEnv)
	}
	bad := []struct{ url, env, want string }{
		{"https://evil.example.com/x", "", "apps.yaml:4: apps[0].webhook.url: host not allowed"},
		{"", "", "apps[0].webhook.url: url is required"},
		{"https://hooks.example.com/x", "sk-abcdefghijklmnopqrstuvwxyz", "apps[0].webhook.secret_env: this looks like an OpenAI API key"},
	}
	for _, tc := range bad {
		_, err := Parse("apps.yaml", []byte(webhookApps(tc.url, tc.env)), WebhookURLs(onlyHooks))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("webhook %q, secret_env %q: %v, want %q", tc.url, tc.env, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-abc") {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
}
