package apps

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// Providers are the provider names a models entry may give. They match
// runner/model/providers, which cmd hands the builder (a test in cmd
// checks that the two lists agree).
var Providers = []string{"gemini", "openai", "anthropic", "offline"}

// Option changes what Parse and Validate accept.
type Option func(*options)

type options struct {
	undeclared     func(string) bool
	undeclaredWant string
	webhookURL     func(string) error
}

// WebhookURLs makes an app's webhook URL an error unless check accepts
// it: the server passes its allow list of hosts, checked at start and at
// every reload. Without it any URL is accepted.
func WebhookURLs(check func(url string) error) Option {
	return func(o *options) { o.webhookURL = check }
}

// UndeclaredModels makes a model name that no models entry declares an
// error unless ok accepts it; want says, in the error, what such names
// look like. Without it any name is accepted and left to the
// ModelFactory. The server passes the names its factory takes for Gemini
// and offline, so that "model: gpt-4o" without an entry fails at start
// with its file and line, not at its first call.
func UndeclaredModels(ok func(name string) bool, want string) Option {
	return func(o *options) { o.undeclared, o.undeclaredWant = ok, want }
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validateModels checks the models section, adding its problems to errs,
// and returns the declared names.
func validateModels(models []*agentrunnerv1.ModelConfig, o options, errs *errList) map[string]bool {
	names := map[string]bool{}
	for i, m := range models {
		p := fmt.Sprintf("models[%d]", i)
		switch name := m.GetName(); {
		case name == "":
			errs.add(&Error{Path: p + ".name", Msg: "model name is required"})
		case name == "offline" || strings.HasPrefix(name, "offline:"):
			errs.add(&Error{Path: p + ".name", Msg: fmt.Sprintf("%q is reserved for the offline model", name)})
		case names[name]:
			errs.add(&Error{Path: p + ".name", Msg: fmt.Sprintf("duplicate model name %q", name)})
		}
		names[m.GetName()] = true
		errs.add(validateModel(m, p))
	}
	for i, m := range models {
		for j, fb := range m.GetFallbacks() {
			p := fmt.Sprintf("models[%d].fallbacks[%d]", i, j)
			switch {
			case fb == m.GetName():
				errs.add(&Error{Path: p, Msg: "a model cannot be its own fallback"})
			case slices.Contains(m.GetFallbacks()[:j], fb):
				errs.add(&Error{Path: p, Msg: fmt.Sprintf("fallback %q given twice", fb)})
			case !names[fb] && !isOffline(fb) && (o.undeclared == nil || !o.undeclared(fb)):
				errs.add(&Error{Path: p, Msg: fmt.Sprintf("no model %q in models%s", fb, didYouMean(fb, slices.Sorted(maps.Keys(names))))})
			}
		}
	}
	return names
}

// validateModel checks one entry's fields.
func validateModel(m *agentrunnerv1.ModelConfig, p string) error {
	if !slices.Contains(Providers, m.GetProvider()) {
		return &Error{Path: p + ".provider", Msg: fmt.Sprintf("unknown provider %q%s, want one of %v", m.GetProvider(), didYouMean(m.GetProvider(), Providers), Providers)}
	}
	if u := m.GetBaseUrl(); u != "" {
		parsed, err := url.Parse(u)
		if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			return &Error{Path: p + ".base_url", Msg: "want an http or https URL with a host (the value is not shown: a URL may hold a password)"}
		}
	}
	if e := m.GetApiKeyEnv(); e != "" {
		if err := checkEnvName(e, p+".api_key_env"); err != nil {
			return err
		}
	}
	durations := []struct{ field, value string }{
		{"timeout", m.GetTimeout()},
		{"idle_timeout", m.GetIdleTimeout()},
		{"retry.initial_backoff", m.GetRetry().GetInitialBackoff()},
		{"retry.max_backoff", m.GetRetry().GetMaxBackoff()},
		{"retry.max_elapsed", m.GetRetry().GetMaxElapsed()},
		{"offline.first_chunk_delay", m.GetOffline().GetFirstChunkDelay()},
		{"offline.chunk_delay", m.GetOffline().GetChunkDelay()},
	}
	for _, d := range durations {
		if d.value == "" {
			continue
		}
		if v, err := time.ParseDuration(d.value); err != nil || v <= 0 {
			return &Error{Path: p + "." + d.field, Msg: fmt.Sprintf("want a positive Go duration such as \"30s\", got %q", d.value)}
		}
	}
	if m.GetRetry().GetMaxAttempts() < 0 {
		return &Error{Path: p + ".retry.max_attempts", Msg: "must not be negative"}
	}
	// The offline section paces the offline model only; on another
	// provider it would be silently ignored.
	if m.GetOffline() != nil && m.GetProvider() != "offline" {
		return &Error{Path: p + ".offline", Msg: fmt.Sprintf("only for provider \"offline\", not %q", m.GetProvider())}
	}
	if m.GetOffline().GetChunks() < 0 {
		return &Error{Path: p + ".offline.chunks", Msg: "must not be negative"}
	}
	return validatePrice(m.GetPrice(), p)
}

// checkModelRef checks an agent's model name against the models section.
func checkModelRef(name, path string, declared map[string]bool, o options) error {
	if declared[name] || isOffline(name) || o.undeclared == nil || o.undeclared(name) {
		return nil
	}
	return &Error{Path: path, Msg: fmt.Sprintf("model %q is not declared in models and is not %s%s: declare it, for example models: [{name: %s, provider: openai}]", name, o.undeclaredWant, didYouMean(name, slices.Sorted(maps.Keys(declared))), name)}
}

func isOffline(name string) bool {
	return name == "offline" || strings.HasPrefix(name, "offline:")
}

// validateCompaction checks an app's compaction settings: counts that
// make sense together, and a summarizer to write the summaries.
func validateCompaction(app *agentrunnerv1.AppConfig, path string, declared map[string]bool, o options) error {
	cc := app.GetCompaction()
	if cc == nil {
		return nil
	}
	p := path + ".compaction"
	switch {
	case cc.GetInterval() < 0:
		return &Error{Path: p + ".interval", Msg: "must not be negative"}
	case cc.GetOverlap() < 0:
		return &Error{Path: p + ".overlap", Msg: "must not be negative"}
	case cc.GetInterval() > 0 && cc.GetOverlap() >= cc.GetInterval():
		return &Error{Path: p + ".overlap", Msg: fmt.Sprintf("must be less than interval (%d): the runs it keeps verbatim come out of those compacted", cc.GetInterval())}
	case cc.GetTokenThreshold() < 0:
		return &Error{Path: p + ".token_threshold", Msg: "must not be negative"}
	case cc.GetMaxEvents() < -1:
		return &Error{Path: p + ".max_events", Msg: "want a positive cap, 0 for the default (1000) or -1 for none"}
	}
	if m := cc.GetModel(); m != "" {
		return checkModelRef(m, p+".model", declared, o)
	}
	if !hasLLMAgent(app.GetRootAgent()) {
		return &Error{Path: p + ".model", Msg: "the app has no LLM agent whose model could summarize: name a model"}
	}
	return nil
}

// validateContextCache checks an app's context cache settings.
func validateContextCache(app *agentrunnerv1.AppConfig, path string) error {
	cc := app.GetContextCache()
	if cc == nil {
		return nil
	}
	p := path + ".context_cache"
	switch {
	case cc.GetCacheIntervals() < 0:
		return &Error{Path: p + ".cache_intervals", Msg: "must not be negative"}
	case cc.GetMinTokens() < 0:
		return &Error{Path: p + ".min_tokens", Msg: "must not be negative"}
	}
	if t := cc.GetTtl(); t != "" {
		if v, err := time.ParseDuration(t); err != nil || v <= 0 {
			return &Error{Path: p + ".ttl", Msg: fmt.Sprintf("%q is not a positive duration (for example \"30m\")", t)}
		}
	}
	return nil
}

// contextCache converts an app's context cache settings; nil when the
// app has none. The settings are validated.
func contextCache(cc *agentrunnerv1.ContextCacheConfig) *model.CacheConfig {
	if cc == nil {
		return nil
	}
	ttl, _ := time.ParseDuration(cc.GetTtl())
	return &model.CacheConfig{Intervals: int(cc.GetCacheIntervals()), TTL: ttl, MinTokens: int(cc.GetMinTokens())}
}

func hasLLMAgent(a *agentrunnerv1.AgentConfig) bool {
	if a.GetLlm() != nil {
		return true
	}
	return slices.ContainsFunc(a.GetSubAgents(), hasLLMAgent)
}
