package main

import (
	"strings"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/webhook"
)

func hookFlags(allow string) webhookFlags {
	return webhookFlags{allowHosts: allow, retryFor: time.Hour, timeout: time.Second, poll: time.Second}
}

// TestWebhookSecrets: allowing hosts needs the default secret, an app's
// own secret_env must be set, deliveries sign with the app's secret or
// the default, and no error shows a secret.
func TestWebhookSecrets(t *testing.T) {
	const secret, appSecret = "default-secret-0123456789", "digest-secret-0123456789"
	t.Setenv(webhook.SecretEnv, "tiny-x")
	if _, err := newWebhooks(hookFlags("hooks.example.com")); err == nil || !strings.Contains(err.Error(), webhook.SecretEnv) || strings.Contains(err.Error(), "tiny-x") {
		t.Fatalf("allowed hosts with a short secret: %v", err)
	}
	h, err := newWebhooks(hookFlags(""))
	if err != nil {
		t.Fatalf("no webhooks need no secret: %v", err)
	}
	if h.urlCheck() != nil {
		t.Fatal("with no host allowed, StartRun's webhooks must be refused (a nil check)")
	}
	t.Setenv(webhook.SecretEnv, secret)
	if h, err = newWebhooks(hookFlags("hooks.example.com")); err != nil {
		t.Fatal(err)
	}
	if err := h.urlCheck()("https://hooks.example.com/x"); err != nil {
		t.Fatalf("an allowed URL: %v", err)
	}
	digest := apps.App{Name: "digest", Webhook: &agentrunnerv1.Webhook{Url: "https://hooks.example.com/d"}, WebhookSecretEnv: "DIGEST_SECRET"}
	t.Setenv("DIGEST_SECRET", "")
	if err := h.checkApps([]apps.App{digest}); err == nil || !strings.Contains(err.Error(), "DIGEST_SECRET") {
		t.Fatalf("an app whose secret is unset: %v", err)
	}
	t.Setenv("DIGEST_SECRET", appSecret)
	if err := h.checkApps([]apps.App{digest}); err != nil {
		t.Fatal(err)
	}
	h.setApps([]apps.App{digest, {Name: "other"}})
	for app, want := range map[string]string{"digest": appSecret, "other": secret, "gone": secret} {
		if got, err := h.secret(app); err != nil || string(got) != want {
			t.Errorf("secret(%s) = %q, %v; want %q", app, got, err, want)
		}
	}
	if _, err := newWebhooks(hookFlags("https://hooks.example.com/")); err == nil {
		t.Error("a URL accepted as an allowed host")
	}
}
