package apps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/store"
)

// App is an agent tree to be served under Name.
type App struct {
	Name        string
	Description string
	Root        agent.Agent
	// Unavailable says why the app cannot run (a model without
	// credentials), empty when it can. Runs of the app are refused with
	// runner.ErrAppUnavailable and the reason.
	Unavailable string
	// Compaction condenses the app's long sessions (see
	// runner.Compaction).
	Compaction runner.Compaction
	// AddSessionsToMemory adds each session of the app to memory after
	// each of its complete events (see runner.Config).
	AddSessionsToMemory bool
	// Budgets cap what the app's runs spend (see runner.Budgets).
	Budgets runner.Budgets
	// Schedules are the app's schedules of the apps file (see
	// Registry.Schedules); Build sets them.
	Schedules []*agentrunnerv1.Schedule
	// Version names this config of the app (runner.Config.ConfigVersion):
	// Build sets a hash of the app's entry in the apps file and of the
	// file's models. Empty names none: Reload then treats the app as
	// changed every time.
	Version string
	// Webhook is where the app's runs call back (runner.Config.Webhook),
	// and WebhookSecretEnv the environment variable holding the secret
	// its deliveries are signed with ("" for the server's default).
	Webhook          *agentrunnerv1.Webhook
	WebhookSecretEnv string

	// closer releases what the app holds (its MCP connections); set by
	// Build.
	closer func() error
}

// Close releases what the app holds: the connections to its MCP servers.
func (a App) Close() error {
	if a.closer == nil {
		return nil
	}
	return a.closer()
}

// Config holds what every app's runner shares.
type Config struct {
	Store  runner.Store
	Memory memory.Service
	// Plugins are given to every app's runner, in this order.
	Plugins []plugin.Plugin
	// PluginCloseTimeout bounds Close; zero means
	// runner.DefaultPluginCloseTimeout.
	PluginCloseTimeout time.Duration
	Now                func() time.Time
	NewID              func() string
	Logger             *slog.Logger
	// Replica and LeaseTTL configure session leases on a store that
	// several replicas share (see runner.Config).
	Replica  string
	LeaseTTL time.Duration
}

// Registry holds the apps a server hosts, each served by its own Runner
// over a shared store. It is safe for concurrent use.
type Registry struct {
	cfg     Config
	plugins *plugin.Manager
	mu      sync.RWMutex
	runners map[string]*runner.Runner
	// retired holds the runners of apps a reload removed: their runs in
	// flight finish there, and an app added back takes its runner again.
	retired map[string]*runner.Runner
	gate    runner.ClaimGate // given to every runner, see SetClaimGate
	// schedules are each app's of the apps file, by app name.
	schedules map[string][]*agentrunnerv1.Schedule
	closers   []func() error // of every app registered or reloaded
}

// NewRegistry returns an empty registry; it fails when the plugins do
// (see plugin.NewManager).
func NewRegistry(cfg Config) (*Registry, error) {
	m, err := plugin.NewManager(cfg.Plugins, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("apps registry: %w", err)
	}
	return &Registry{cfg: cfg, plugins: m, runners: make(map[string]*runner.Runner), retired: make(map[string]*runner.Runner),
		schedules: make(map[string][]*agentrunnerv1.Schedule)}, nil
}

// Register validates app's tree and adds a Runner for it. A name already
// registered is an error wrapping store.ErrAlreadyExists.
func (g *Registry) Register(app App) (*runner.Runner, error) {
	r, err := runner.New(g.runnerConfig(app))
	if err != nil {
		return nil, fmt.Errorf("register app: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.runners[app.Name]; ok {
		return nil, fmt.Errorf("register app %q: %w", app.Name, store.ErrAlreadyExists)
	}
	g.runners[app.Name] = r
	g.schedules[app.Name] = app.Schedules
	g.closers = append(g.closers, app.Close)
	return r, nil
}

// Lookup returns the Runner of the app named name.
func (g *Registry) Lookup(name string) (*runner.Runner, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, ok := g.runners[name]
	return r, ok
}

// List describes every app, ordered by name.
func (g *Registry) List() []*agentrunnerv1.App {
	g.mu.RLock()
	runners := make([]*runner.Runner, 0, len(g.runners))
	for _, r := range g.runners {
		runners = append(runners, r)
	}
	g.mu.RUnlock()
	slices.SortFunc(runners, func(x, y *runner.Runner) int { return strings.Compare(x.AppName(), y.AppName()) })
	out := make([]*agentrunnerv1.App, len(runners))
	for i, r := range runners {
		out[i] = r.Info()
	}
	return out
}

// Close closes the shared plugins once (the runners share them), within
// PluginCloseTimeout, and what the registered apps hold (their MCP
// connections). Runs must have ended.
func (g *Registry) Close(ctx context.Context) error {
	timeout := g.cfg.PluginCloseTimeout
	if timeout <= 0 {
		timeout = runner.DefaultPluginCloseTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	g.mu.Lock()
	closers := g.closers
	g.closers = nil
	g.mu.Unlock()
	errs := []error{g.plugins.Close(ctx)}
	for _, c := range closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// runnerConfig is the runner configuration of app.
func (g *Registry) runnerConfig(app App) runner.Config {
	return runner.Config{
		AppName:             app.Name,
		Description:         app.Description,
		Unavailable:         app.Unavailable,
		Compaction:          app.Compaction,
		Root:                app.Root,
		ConfigVersion:       app.Version,
		Webhook:             app.Webhook,
		Store:               g.cfg.Store,
		Memory:              g.cfg.Memory,
		AddSessionsToMemory: app.AddSessionsToMemory,
		Budgets:             app.Budgets,
		Plugins:             g.cfg.Plugins,
		Now:                 g.cfg.Now,
		NewID:               g.cfg.NewID,
		Logger:              g.cfg.Logger,
		Replica:             g.cfg.Replica,
		LeaseTTL:            g.cfg.LeaseTTL,
	}
}
