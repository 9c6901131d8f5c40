package runner

import (
	"cmp"
	"fmt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/budget"
	"github.com/agentrunner/agentrunner/runner/internal/history"
	"github.com/agentrunner/agentrunner/runner/internal/turn"
)

// appConfig is one version of what an app runs: its tree, the turn's
// environment built on it, and what ListApps says of it. A run keeps the
// version it was admitted with to its end, and a run that waits on its
// caller goes on with it when answered, so that a reload (Reconfigure)
// changes new runs only. Versions are never changed once built.
type appConfig struct {
	version     string
	description string
	unavailable string
	tree        *agent.Tree
	env         *turn.Env
	webhook     *agentrunnerv1.Webhook // Config.Webhook
}

// newAppConfig builds the version cfg describes. The history cache, the
// plugins and the spend reader are the runner's, shared by every version:
// they hold sessions and resources, not the app's config.
func (r *Runner) newAppConfig(cfg Config, hist *history.Cache) (*appConfig, error) {
	t, err := agent.NewTree(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("new runner %s: %w", cfg.AppName, err)
	}
	env := &turn.Env{
		Store: cfg.Store, Tree: t, Plugins: r.plugins,
		Memory: cfg.Memory, AddToMemory: cfg.AddSessionsToMemory && cfg.Memory != nil,
		History:    hist,
		Compaction: cfg.Compaction.turn(), MaxLLMCalls: DefaultMaxLLMCalls, Now: r.now, NewID: r.newID, Log: r.log,
		Budgets: cfg.Budgets.caps(),
	}
	if sr, ok := cfg.Store.(budget.Reader); ok {
		env.Spend = sr
	} else if cfg.Budgets.UserDaily != (BudgetLimit{}) || cfg.Budgets.AppDaily != (BudgetLimit{}) {
		return nil, fmt.Errorf("new runner %s: daily budgets need a store that keeps the days' spend", cfg.AppName)
	}
	return &appConfig{version: cfg.ConfigVersion, description: cfg.Description, unavailable: cfg.Unavailable, tree: t, env: env, webhook: cfg.Webhook}, nil
}

// newHistory is the runner's cache of recent events, from cfg's bounds.
func newHistory(cfg Config) *history.Cache {
	return history.New(cmp.Or(cfg.HistoryEvents, DefaultHistoryEvents),
		cmp.Or(cfg.HistoryCacheEvents, DefaultHistoryCacheEvents), cmp.Or(cfg.HistoryCacheBytes, DefaultHistoryCacheBytes))
}

// Reconfigure makes cfg the app's config for the runs admitted from now
// on: its tree, description, availability, compaction, memory and
// budgets, under cfg.ConfigVersion. Runs in flight or queued keep the
// config they were admitted with, and a run waiting on its caller
// (RUN_STATUS_INPUT_REQUIRED) goes on with its own when answered, as long
// as this runner lives: the runner keeps every version it had until it
// is closed. cfg.AppName must be the runner's; cfg.Store is the runner's
// whatever it says, and the plugins, history and replica settings stay
// those New was given. A version already loaded is made current again
// as it was built.
func (r *Runner) Reconfigure(cfg Config) error {
	if cfg.AppName != r.appName {
		return fmt.Errorf("reconfigure runner %s: app name %q is another app's", r.appName, cfg.AppName)
	}
	cfg.Store = r.store
	r.configs.Lock()
	defer r.configs.Unlock()
	if old, ok := r.configs.byVersion[cfg.ConfigVersion]; ok && cfg.ConfigVersion != "" {
		r.configs.cur.Store(old)
		return nil
	}
	c, err := r.newAppConfig(cfg, r.config().env.History)
	if err != nil {
		return err
	}
	r.configs.byVersion[c.version] = c
	r.configs.cur.Store(c)
	return nil
}

// ConfigVersion is the version of the app's current config
// (Config.ConfigVersion).
func (r *Runner) ConfigVersion() string { return r.config().version }

// config is the app's current config, the one new runs take.
func (r *Runner) config() *appConfig { return r.configs.cur.Load() }

// configOf is the config of version v, for a stored run that goes on
// (resumed, answered, recovered): its own when this runner still has it,
// else (after a restart, or an app built in code without versions) the
// current one.
func (r *Runner) configOf(v string) *appConfig {
	r.configs.Lock()
	defer r.configs.Unlock()
	if c, ok := r.configs.byVersion[v]; ok && v != "" {
		return c
	}
	return r.configs.cur.Load()
}
