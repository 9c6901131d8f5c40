package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"

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

// hookedApps is an apps file whose app calls back url, signed with the
// secret in DESK_HOOK_SECRET.
const hookedApps = `models:
  - { name: quick, provider: offline }
apps:
  - name: desk
    webhook: { url: %q, secret_env: DESK_HOOK_SECRET }
    root_agent: { name: desk, llm: { model: quick } }
`

// TestReloadChecksWebhooks: a reload checks the apps file's webhooks as
// the start does: a host not allowed, or an app secret unset, refuses
// the whole file (INVALID_ARGUMENT, its line) and the app stays as it
// was.
func TestReloadChecksWebhooks(t *testing.T) {
	t.Setenv(envWebhookAllowHosts, "hooks.example.com")
	t.Setenv(webhook.SecretEnv, "default-secret-0123456789")
	t.Setenv("DESK_HOOK_SECRET", "desk-secret-0123456789")
	dir := t.TempDir()
	config := writeFile(t, filepath.Join(dir, "apps.yaml"), fmt.Sprintf(hookedApps, "https://hooks.example.com/desk"))
	addr, rc, _ := runsServer(t, filepath.Join(dir, "data.db"), config)
	ac := servicev1.NewAdminServiceClient(dial(t, addr))
	v := appVersion(t, rc)

	writeFile(t, config, fmt.Sprintf(hookedApps, "https://evil.example.com/desk"))
	_, err := ac.ReloadApps(t.Context(), &servicev1.ReloadAppsRequest{})
	if msg := status.Convert(err).Message(); status.Code(err) != codes.InvalidArgument ||
		!strings.Contains(msg, "apps.yaml:5") || !strings.Contains(msg, "host not allowed") {
		t.Fatalf("reload with a webhook to a host not allowed: %v", err)
	}
	t.Setenv("DESK_HOOK_SECRET", "")
	writeFile(t, config, fmt.Sprintf(hookedApps, "https://hooks.example.com/other"))
	_, err = ac.ReloadApps(t.Context(), &servicev1.ReloadAppsRequest{})
	if msg := status.Convert(err).Message(); status.Code(err) == codes.OK || !strings.Contains(msg, "DESK_HOOK_SECRET") {
		t.Fatalf("reload with the app's secret unset: %v", err)
	}
	if got := appVersion(t, rc); got != v {
		t.Fatalf("refused reloads changed the app's version: %s, was %s", got, v)
	}
}
