package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/webhook"
	"github.com/agentrunner/agentrunner/store"
)

// envWebhookAllowHosts is --webhook-allow-hosts' environment fallback.
const envWebhookAllowHosts = "AGENTRUNNER_WEBHOOK_ALLOW_HOSTS"

// webhookFlags configure the runs' webhooks (docs/operations.md,
// "Webhooks").
type webhookFlags struct {
	allowHosts string
	retryFor   time.Duration
	timeout    time.Duration
	poll       time.Duration
}

func webhookFlagsInto(fs *flag.FlagSet, f *webhookFlags) {
	fs.StringVar(&f.allowHosts, "webhook-allow-hosts", "", "comma-separated hosts runs may call back (StartRun's webhook, an app's webhook): `host`, host:port or *.domain; empty calls no webhook (env "+envWebhookAllowHosts+"); deliveries are signed with "+webhook.SecretEnv)
	fs.DurationVar(&f.retryFor, "webhook-retry-for", 24*time.Hour, "how long after a run stops its failed webhook deliveries are retried (exponential backoff with jitter, up to 10m apart) before they are kept as failed")
	fs.DurationVar(&f.timeout, "webhook-timeout", 10*time.Second, "longest one webhook attempt may take; a slower receiver's attempt fails and is retried")
	fs.DurationVar(&f.poll, "webhook-poll", time.Second, "how often the webhook outbox is read for deliveries due")
}

// webhooks is serve's side of the runs' webhooks: the allow list, the
// secret of each app's deliveries, and the worker.
type webhooks struct {
	f     webhookFlags
	allow webhook.Allow

	mu         sync.RWMutex
	secretEnvs map[string]string // app -> its WebhookConfig.secret_env
}

// newWebhooks reads the flags; with hosts allowed, the default secret
// must be set, so that no delivery goes unsigned.
func newWebhooks(f webhookFlags) (*webhooks, error) {
	allow, err := webhook.ParseAllow(strings.Split(f.allowHosts, ","))
	if err != nil {
		return nil, usagef("--webhook-allow-hosts: %v", err)
	}
	if f.retryFor <= 0 || f.timeout <= 0 || f.poll <= 0 {
		return nil, usagef("--webhook-retry-for, --webhook-timeout and --webhook-poll must be positive")
	}
	h := &webhooks{f: f, allow: allow, secretEnvs: map[string]string{}}
	if !allow.Empty() {
		if _, err := secretOf(webhook.SecretEnv); err != nil {
			return nil, fmt.Errorf("--webhook-allow-hosts is set: %w", err)
		}
	}
	return h, nil
}

// secretOf reads a webhook secret from the environment variable env; its
// value never reaches a log or an error.
func secretOf(env string) ([]byte, error) {
	v := os.Getenv(env)
	if len(v) < webhook.MinSecretBytes {
		return nil, fmt.Errorf("the webhook secret in %s is unset or shorter than %d bytes", env, webhook.MinSecretBytes)
	}
	return []byte(v), nil
}

// check is the URL check of StartRun's and the apps file's webhooks.
func (h *webhooks) check(url string) error { return h.allow.Check(url) }

// urlCheck is StartRun's check: nil, refusing every webhook, when no
// host is allowed.
func (h *webhooks) urlCheck() func(string) error {
	if h.allow.Empty() {
		return nil
	}
	return h.check
}

// option is the apps file's check of its webhooks.
func (h *webhooks) option() apps.Option { return apps.WebhookURLs(h.check) }

// checkApps refuses apps whose own secret is not set, as a model's
// missing API key is refused: at start and at reload, before anything
// applies.
func (h *webhooks) checkApps(served []apps.App) error {
	for _, a := range served {
		if a.WebhookSecretEnv == "" {
			continue
		}
		if _, err := secretOf(a.WebhookSecretEnv); err != nil {
			return fmt.Errorf("app %s: webhook.secret_env: %w", a.Name, err)
		}
	}
	return nil
}

// setApps makes served's secrets those of their apps' deliveries from
// now on; an app without one, or no longer served, signs with the
// default secret.
func (h *webhooks) setApps(served []apps.App) {
	envs := map[string]string{}
	for _, a := range served {
		if a.WebhookSecretEnv != "" {
			envs[a.Name] = a.WebhookSecretEnv
		}
	}
	h.mu.Lock()
	h.secretEnvs = envs
	h.mu.Unlock()
}

// secret returns the secret app's deliveries are signed with, read from
// the environment at each delivery.
func (h *webhooks) secret(app string) ([]byte, error) {
	h.mu.RLock()
	env, ok := h.secretEnvs[app]
	h.mu.RUnlock()
	if !ok {
		env = webhook.SecretEnv
	}
	return secretOf(env)
}

// start runs the delivery worker on st's outbox until the returned stop,
// which waits for its attempts in flight. Without allowed hosts it still
// runs: deliveries queued before (a host since removed) fail, unsent.
func (h *webhooks) start(ctx context.Context, st store.Store, observe func(string), log *slog.Logger) (stop func()) {
	outbox, ok := st.(store.WebhookOutbox)
	if !ok {
		log.Info("webhooks are off: this store keeps no outbox", "store", fmt.Sprintf("%T", st))
		return func() {}
	}
	w, err := webhook.New(outbox, webhook.Options{
		Allow: h.allow, Secret: h.secret, AttemptTimeout: h.f.timeout, RetryFor: h.f.retryFor,
		Poll: h.f.poll, Log: log, Observe: observe,
	})
	if err != nil {
		panic(err) // Secret is set above: a wiring mistake
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	return func() { cancel(); <-done }
}
