package runner

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// App is an agent tree built in code, to be served under Name.
type App struct {
	Name        string
	Description string
	Root        Agent
}

// AppsConfig holds what every app's Runner shares.
type AppsConfig struct {
	Store  Store
	Memory MemoryService
	Now    func() time.Time
	NewID  func() string
	Logger *slog.Logger
}

// Apps is a registry of apps, each served by its own Runner over a shared
// store. It is safe for concurrent use.
type Apps struct {
	cfg     AppsConfig
	mu      sync.RWMutex
	runners map[string]*Runner
}

// NewApps returns an empty registry.
func NewApps(cfg AppsConfig) *Apps {
	return &Apps{cfg: cfg, runners: make(map[string]*Runner)}
}

// Register validates app's tree and adds a Runner for it. A name already
// registered is an error wrapping store.ErrAlreadyExists.
func (a *Apps) Register(app App) (*Runner, error) {
	r, err := New(Config{
		AppName: app.Name,
		Root:    app.Root,
		Store:   a.cfg.Store,
		Memory:  a.cfg.Memory,
		Now:     a.cfg.Now,
		NewID:   a.cfg.NewID,
		Logger:  a.cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("register app: %w", err)
	}
	r.description = app.Description
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.runners[app.Name]; ok {
		return nil, fmt.Errorf("register app %q: %w", app.Name, store.ErrAlreadyExists)
	}
	a.runners[app.Name] = r
	return r, nil
}

// Lookup returns the Runner of the app named name.
func (a *Apps) Lookup(name string) (*Runner, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	r, ok := a.runners[name]
	return r, ok
}

// List describes every app, ordered by name.
func (a *Apps) List() []*agentrunnerv1.App {
	a.mu.RLock()
	runners := make([]*Runner, 0, len(a.runners))
	for _, r := range a.runners {
		runners = append(runners, r)
	}
	a.mu.RUnlock()
	slices.SortFunc(runners, func(x, y *Runner) int {
		switch {
		case x.appName < y.appName:
			return -1
		case x.appName > y.appName:
			return 1
		}
		return 0
	})
	out := make([]*agentrunnerv1.App, len(runners))
	for i, r := range runners {
		out[i] = r.Info()
	}
	return out
}
