package main

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/demo"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/runner/model/providers"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/store"
)

// defaultApps is the apps file used without --config: an LLM agent tree
// that runs on the offline model when no Gemini credentials are set.
//
//go:embed default_apps.yaml
var defaultApps []byte

// loadApps builds the apps serve hosts: those of the apps file when one is
// given, else the default apps file plus the built-in demo app, so that a
// fresh server has something to run. An apps file that does not load or build fails the start, with
// the file, line and path of the problem.
func loadApps(ctx context.Context, configPath string, st store.Store, ls leasing, hooks *webhooks, log *slog.Logger, extra ...plugin.Plugin) (*apps.Registry, error) {
	// Memory needs the store's inverted index, which both the bbolt and
	// the PostgreSQL store keep; a store without one (a test double, a
	// third store) runs its apps without memory, and says so.
	var mem memory.Service
	if ix, ok := st.(memory.Indexer); ok {
		mem = memory.NewIndex(ix)
	} else {
		log.Info("long-term memory is off: this store keeps no memory index", "store", fmt.Sprintf("%T", st))
	}
	reg, err := apps.NewRegistry(apps.Config{
		Store:    st,
		Memory:   mem,
		Plugins:  append([]plugin.Plugin{plugin.NewLogging(log)}, extra...),
		Logger:   log,
		Replica:  ls.name(),
		LeaseTTL: ls.ttl,
	})
	if err != nil {
		return nil, err
	}
	served, err := buildApps(ctx, configPath, hooks, log)
	if err != nil {
		return nil, err
	}
	hooks.setApps(served)
	for _, app := range served {
		if _, err := reg.Register(app); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// buildApps reads and builds the apps of the apps file, or the default
// apps without one: what the start serves, and what a reload checks
// (models and secrets included) before it applies anything.
func buildApps(ctx context.Context, configPath string, hooks *webhooks, log *slog.Logger) ([]apps.App, error) {
	var served []apps.App
	check := apps.UndeclaredModels(providers.IsGeminiName, "a Gemini model name (gemini-…, models/…, projects/…)")
	hooksCheck := hooks.option()
	if configPath == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("default apps: find this binary for its MCP demo server: %w", err)
		}
		cfg, err := apps.Parse("default_apps.yaml", bytes.ReplaceAll(defaultApps, []byte("{{self}}"), []byte(self)), check)
		if err != nil {
			return nil, err
		}
		// The default apps run on the offline model when Gemini has no
		// credentials, so that a fresh machine serves them.
		factory := providers.New(providers.Options{Models: cfg.GetModels(), OfflineFallback: true, Logger: log})
		builder := apps.Builder{Models: factory.Model, Logger: log}
		if served, err = builder.Build(ctx, cfg); err != nil {
			return nil, fmt.Errorf("default apps: %w", err)
		}
		served = append(served, demo.App())
	} else {
		cfg, err := apps.LoadFile(configPath, check, hooksCheck)
		if err != nil {
			return nil, err
		}
		factory := providers.New(providers.Options{Models: cfg.GetModels(), Logger: log})
		builder := apps.Builder{Models: factory.Model, Logger: log}
		served, err = builder.Build(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("apps file %s: %w", configPath, err)
		}
	}
	if err := hooks.checkApps(served); err != nil {
		return nil, fmt.Errorf("apps file %s: %w", configPath, err)
	}
	return served, nil
}

// defaultAppNames names the apps served without --config, for serve -h:
// those of the default apps file and the demo app.
func defaultAppNames() []string {
	names := []string{demo.Name}
	cfg, err := apps.Parse("default_apps.yaml", defaultApps)
	if err != nil {
		return names // the start reports it, with its line
	}
	for _, a := range cfg.GetApps() {
		names = append(names, a.GetName())
	}
	slices.Sort(names)
	return names
}

// leasing is how serve's runners lease sessions on a shared store.
type leasing struct {
	ttl     time.Duration
	replica string
}

// name is the replica's name: the flag's, else host name and process id,
// which an operator reading a busy-session error can find.
func (l leasing) name() string {
	if l.replica != "" {
		return l.replica
	}
	host, err := os.Hostname()
	if err != nil {
		host = "replica"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}
