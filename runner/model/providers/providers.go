// Package providers turns the model names of an apps file into models: a
// name declared in the file's models section runs on its provider (gemini,
// openai, anthropic or offline) under its retry policy, with its
// fallbacks; any other name is a Gemini model, as it always was.
// Credentials are checked when a model is made, not at its first call: a
// model whose key is missing is a *model.CredentialsError, which the apps
// builder turns into an unavailable app.
//
// Imports: model, the provider packages, retry and the generated config
// messages. It must not import the runner, agents, tools, plugins, memory,
// apps, store, server or gRPC (runner/deps_test.go checks); the apps
// package reaches it only through the ModelFactory that cmd hands it.
package providers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/anthropic"
	"github.com/agentrunner/agentrunner/runner/model/gemini"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/runner/model/openai"
	"github.com/agentrunner/agentrunner/runner/model/retry"
)

// The provider names a models entry may give.
const (
	Gemini    = "gemini"
	OpenAI    = "openai"
	Anthropic = "anthropic"
	Offline   = "offline"
)

// Names lists the providers, for error messages.
var Names = []string{Gemini, OpenAI, Anthropic, Offline}

// geminiCredentials is what to set for Gemini, said the way an operator
// reads it.
const geminiCredentials = "GOOGLE_API_KEY or GEMINI_API_KEY (or GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT)"

// Options configure a Factory.
type Options struct {
	// Models is the apps file's models section, already validated (see
	// apps.Validate).
	Models []*agentrunnerv1.ModelConfig
	// OfflineFallback makes an undeclared (Gemini) name without Gemini
	// credentials run on the offline model, named "offline:<name>" and
	// logged as a warning, instead of being a CredentialsError. The
	// built-in default apps use it so that a fresh machine runs them.
	OfflineFallback bool
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Logger receives the warnings and every retry; nil discards them.
	Logger *slog.Logger
}

// Factory makes models by name. It is not safe for concurrent use; the
// apps builder calls it once per distinct name at start.
type Factory struct {
	opts     Options
	declared map[string]*agentrunnerv1.ModelConfig
	log      *slog.Logger
}

// New returns a factory over opts.
func New(opts Options) *Factory {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	declared := make(map[string]*agentrunnerv1.ModelConfig, len(opts.Models))
	for _, m := range opts.Models {
		declared[m.GetName()] = m
	}
	return &Factory{opts: opts, declared: declared, log: log}
}

// Model returns the model agents call by name: offline for "offline" and
// "offline:<name>", the declared entry's provider under its retry policy
// and fallbacks, or a Gemini model under the default policy. A missing
// credential is a *model.CredentialsError naming what to set.
func (f *Factory) Model(ctx context.Context, name string) (model.Model, error) {
	if m, ok := offlineModel(name); ok {
		return m, nil
	}
	mc, ok := f.declared[name]
	if !ok {
		m, standIn, err := f.undeclared(ctx, name)
		if err != nil || standIn {
			return m, err
		}
		// A 429 or a passing 503 is retried, with backoff, rather than
		// failing the turn; what still fails ends in band with a stable
		// code.
		return retry.New(retry.Config{Primary: retry.Target{Model: m, Name: name}, Logger: f.log})
	}
	primary, err := f.target(ctx, name)
	if err != nil {
		return nil, err
	}
	cfg := retry.Config{Primary: primary, Logger: f.log}
	for _, fb := range mc.GetFallbacks() {
		t, err := f.target(ctx, fb)
		if err != nil {
			return nil, fmt.Errorf("fallback %s of %s: %w", fb, name, err)
		}
		cfg.Fallbacks = append(cfg.Fallbacks, t)
	}
	return retry.New(cfg)
}

// IsGeminiName reports whether name, not declared in a models section, is
// taken for a Gemini model: "gemini-…", "gemma-…", "learnlm-…" or a
// resource name ("models/…", "tunedModels/…", "projects/…",
// "publishers/…"). Anything else (gpt-4o, claude-…) needs a models entry,
// so that it fails at start rather than at its first call.
func IsGeminiName(name string) bool {
	for _, p := range []string{"gemini-", "gemma-", "learnlm-", "models/", "tunedModels/", "projects/", "publishers/"} {
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			return true
		}
	}
	return false
}

// IsOfflineName reports whether name is one of the offline model's:
// "offline" or "offline:<name>".
func IsOfflineName(name string) bool {
	_, ok := offlineModel(name)
	return ok
}

// offlineModel is the offline model for its reserved names.
func offlineModel(name string) (model.Model, bool) {
	if name == offline.DefaultName {
		return offline.New(offline.Config{}), true
	}
	if n, ok := strings.CutPrefix(name, offline.DefaultName+":"); ok {
		return offline.New(offline.Config{Name: n}), true
	}
	return nil, false
}

// target is one model, without fallbacks, and its retry policy.
func (f *Factory) target(ctx context.Context, name string) (retry.Target, error) {
	if m, ok := offlineModel(name); ok {
		return retry.Target{Model: m}, nil
	}
	mc, ok := f.declared[name]
	if !ok {
		m, _, err := f.undeclared(ctx, name)
		return retry.Target{Model: m}, err
	}
	policy, err := Policy(mc)
	if err != nil {
		return retry.Target{}, fmt.Errorf("model %s: %w", name, err)
	}
	m, err := f.declaredModel(ctx, mc)
	if err != nil {
		return retry.Target{}, err
	}
	return retry.Target{Model: m, Policy: policy, Name: name, Price: PriceOf(mc), MaxOutputTokens: mc.GetMaxOutputTokens()}, nil
}

// undeclared is a Gemini model by its bare name or, when standIn, its
// offline stand-in.
func (f *Factory) undeclared(ctx context.Context, name string) (m model.Model, standIn bool, err error) {
	if gemini.CredentialsFromEnv() {
		m, err := gemini.New(ctx, name, gemini.WithLogger(f.log), gemini.WithIdleTimeout(model.DefaultIdleTimeout))
		km, err := f.geminiEnvKeyCut(m, err)
		return km, false, err
	}
	if !f.opts.OfflineFallback {
		return nil, false, &model.CredentialsError{Model: name, Provider: Gemini, Set: geminiCredentials}
	}
	f.log.Warn("no Gemini credentials in the environment (GOOGLE_API_KEY, GEMINI_API_KEY or Vertex AI); the offline model answers instead", "model", name)
	return offline.New(offline.Config{Name: name}), true, nil
}

// declaredModel makes the provider's model of one models entry.
func (f *Factory) declaredModel(ctx context.Context, mc *agentrunnerv1.ModelConfig) (model.Model, error) {
	id := mc.GetModel()
	if id == "" {
		id = mc.GetName()
	}
	key, err := f.apiKey(mc)
	if err != nil {
		return nil, err
	}
	idle, err := IdleTimeout(mc)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", mc.GetName(), err)
	}
	switch mc.GetProvider() {
	case Gemini:
		opts := []gemini.Option{gemini.WithLogger(f.log), gemini.WithIdleTimeout(idle)}
		if mc.GetApiKeyEnv() == "" && mc.GetBaseUrl() == "" {
			if !gemini.CredentialsFromEnv() {
				return nil, &model.CredentialsError{Model: mc.GetName(), Provider: Gemini, Set: geminiCredentials}
			}
			return f.geminiEnvKeyCut(gemini.New(ctx, id, opts...))
		}
		m, err := gemini.New(ctx, id, append(opts, gemini.WithAPIKey(key, mc.GetBaseUrl()))...)
		return keyCut(m, err, key)
	case OpenAI:
		m, err := openai.New(openai.Config{Model: id, APIKey: key, BaseURL: mc.GetBaseUrl(), IdleTimeout: idle})
		return keyCut(m, err, key)
	case Anthropic:
		m, err := anthropic.New(anthropic.Config{Model: id, APIKey: key, BaseURL: mc.GetBaseUrl(), IdleTimeout: idle})
		return keyCut(m, err, key)
	case Offline:
		cfg, err := OfflineConfig(mc)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", mc.GetName(), err)
		}
		cfg.Name = id
		return offline.New(cfg), nil
	}
	return nil, fmt.Errorf("model %s: unknown provider %q, want one of %v", mc.GetName(), mc.GetProvider(), Names)
}

// apiKey reads the entry's key from its variable, or from the provider's
// usual one. An OpenAI-compatible server at a base URL with no variable
// named needs no key (a local Ollama, vLLM); nor does offline.
func (f *Factory) apiKey(mc *agentrunnerv1.ModelConfig) (string, error) {
	env := mc.GetApiKeyEnv()
	if env == "" {
		switch {
		case mc.GetProvider() == OpenAI && mc.GetBaseUrl() == "":
			env = "OPENAI_API_KEY"
		case mc.GetProvider() == Anthropic:
			env = "ANTHROPIC_API_KEY"
		default:
			return "", nil
		}
	}
	key := f.opts.Getenv(env)
	if key == "" {
		return "", &model.CredentialsError{Model: mc.GetName(), Provider: mc.GetProvider(), Set: env}
	}
	return key, nil
}

// Policy is the retry policy of a models entry: its retry section and
// per-call timeout, left zero when unset for the retry package's defaults
// (retry.DefaultCallTimeout for the timeout).
func Policy(mc *agentrunnerv1.ModelConfig) (retry.Policy, error) {
	r := mc.GetRetry()
	p := retry.Policy{MaxAttempts: int(r.GetMaxAttempts())}
	durations := []struct {
		field string
		value string
		into  *time.Duration
	}{
		{"timeout", mc.GetTimeout(), &p.CallTimeout},
		{"retry.initial_backoff", r.GetInitialBackoff(), &p.InitialBackoff},
		{"retry.max_backoff", r.GetMaxBackoff(), &p.MaxBackoff},
		{"retry.max_elapsed", r.GetMaxElapsed(), &p.MaxTotal},
	}
	var errs []error
	for _, d := range durations {
		if d.value == "" {
			continue
		}
		v, err := time.ParseDuration(d.value)
		if err != nil || v <= 0 {
			errs = append(errs, &FieldError{Field: d.field, Msg: fmt.Sprintf("want a positive Go duration such as \"30s\", got %q", d.value)})
			continue
		}
		*d.into = v
	}
	if r.GetMaxAttempts() < 0 {
		errs = append(errs, &FieldError{Field: "retry.max_attempts", Msg: "must not be negative"})
	}
	return p, errors.Join(errs...)
}

// PriceOf is a models entry's price list, nil when it has none. The
// entry is validated (apps.Validate): prices have at most six decimals
// and are not negative.
func PriceOf(mc *agentrunnerv1.ModelConfig) *model.Price {
	p := mc.GetPrice()
	if p == nil {
		return nil
	}
	micros := func(perMillion *float64, fallback float64) uint64 {
		v := fallback
		if perMillion != nil {
			v = *perMillion
		}
		return uint64(math.Round(max(v, 0) * 1e6))
	}
	cur := p.GetCurrency()
	if cur == "" {
		cur = model.DefaultCurrency
	}
	return &model.Price{
		Currency:    cur,
		Input:       micros(p.Input, 0),
		Output:      micros(p.Output, 0),
		CachedInput: micros(p.CachedInput, p.GetInput()),
		CacheWrite:  micros(p.CacheWrite, p.GetInput()),
		Thoughts:    micros(p.Thoughts, p.GetOutput()),
	}
}

// IdleTimeout is the idle timeout of a models entry (idle_timeout):
// model.DefaultIdleTimeout when it sets none.
func IdleTimeout(mc *agentrunnerv1.ModelConfig) (time.Duration, error) {
	v := mc.GetIdleTimeout()
	if v == "" {
		return model.DefaultIdleTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, &FieldError{Field: "idle_timeout", Msg: fmt.Sprintf("want a positive Go duration such as \"30s\", got %q", v)}
	}
	return d, nil
}

// OfflineConfig is the pace an offline models entry sets (its offline
// section), without the name.
func OfflineConfig(mc *agentrunnerv1.ModelConfig) (offline.Config, error) {
	oc := mc.GetOffline()
	cfg := offline.Config{Chunks: int(oc.GetChunks())}
	if cfg.Chunks < 0 {
		return cfg, &FieldError{Field: "offline.chunks", Msg: "must not be negative"}
	}
	durations := []struct {
		field, value string
		into         *time.Duration
	}{
		{"offline.first_chunk_delay", oc.GetFirstChunkDelay(), &cfg.FirstChunkDelay},
		{"offline.chunk_delay", oc.GetChunkDelay(), &cfg.ChunkDelay},
	}
	for _, d := range durations {
		if d.value == "" {
			continue
		}
		v, err := time.ParseDuration(d.value)
		if err != nil || v <= 0 {
			return cfg, &FieldError{Field: d.field, Msg: fmt.Sprintf("want a positive Go duration such as \"500ms\", got %q", d.value)}
		}
		*d.into = v
	}
	return cfg, nil
}

// FieldError is a bad value in a models entry, by its field's path within
// the entry.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }
