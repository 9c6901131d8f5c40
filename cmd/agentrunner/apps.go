package main

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/agentrunner/agentrunner/examples/demo"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/gemini"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/runner/model/retry"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/store/boltstore"
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
func loadApps(ctx context.Context, configPath string, st *boltstore.Store, log *slog.Logger, extra ...plugin.Plugin) (*apps.Registry, error) {
	reg, err := apps.NewRegistry(apps.Config{
		Store:   st,
		Memory:  memory.NewStoreMemory(st),
		Plugins: append([]plugin.Plugin{plugin.NewLogging(log)}, extra...),
		Logger:  log,
	})
	if err != nil {
		return nil, err
	}
	var served []apps.App
	builder := apps.Builder{Models: modelFactory(log), Logger: log}
	if configPath == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("default apps: find this binary for its MCP demo server: %w", err)
		}
		cfg, err := apps.Parse("default_apps.yaml", bytes.ReplaceAll(defaultApps, []byte("{{self}}"), []byte(self)))
		if err != nil {
			return nil, err
		}
		if served, err = builder.Build(ctx, cfg); err != nil {
			return nil, fmt.Errorf("default apps: %w", err)
		}
		served = append(served, demo.App())
	} else {
		cfg, err := apps.LoadFile(configPath)
		if err != nil {
			return nil, err
		}
		served, err = builder.Build(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("apps file %s: %w", configPath, err)
		}
	}
	for _, app := range served {
		if _, err := reg.Register(app); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// modelFactory resolves the model names of an apps file. "offline" (or
// "offline:<name>") is the deterministic offline model. Any other name is a
// Gemini model when the environment holds Gemini credentials; without them
// the offline model stands in, named "offline:<name>" and answering
// "offline model: ...", so nobody mistakes it for the real one, and the
// start is logged as a warning. A Gemini model is wrapped in the retry
// package's default policy (3 attempts, backoff from 1s, Retry-After
// honoured).
func modelFactory(log *slog.Logger) apps.ModelFactory {
	return func(ctx context.Context, name string) (model.Model, error) {
		if name == offline.DefaultName {
			return offline.New(offline.Config{}), nil
		}
		if n, ok := strings.CutPrefix(name, offline.DefaultName+":"); ok {
			return offline.New(offline.Config{Name: n}), nil
		}
		if !gemini.CredentialsFromEnv() {
			log.Warn("no Gemini credentials in the environment (GOOGLE_API_KEY, GEMINI_API_KEY or Vertex AI); the offline model answers instead", "model", name)
			return offline.New(offline.Config{Name: name}), nil
		}
		g, err := gemini.New(ctx, name)
		if err != nil {
			return nil, err
		}
		// A 429 or a passing 503 is retried, with backoff, rather than
		// failing the turn; what still fails ends in band with a stable
		// code (RESOURCE_EXHAUSTED, UNAVAILABLE, ...).
		return retry.New(retry.Config{Primary: retry.Target{Model: g}, Logger: log})
	}
}
