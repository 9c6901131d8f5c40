package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/providers"
)

// judgeModels returns the judge models of EvalService: the models of the
// apps file (the default apps' without one, with their offline fallback),
// read again at each evaluation so that a reload's models are the ones
// judging.
func judgeModels(configPath string, log *slog.Logger) func(ctx context.Context, name string) (model.Model, error) {
	return func(ctx context.Context, name string) (model.Model, error) {
		check := apps.UndeclaredModels(providers.IsGeminiName, "a Gemini model name (gemini-…, models/…, projects/…)")
		opts := providers.Options{Logger: log}
		if configPath == "" {
			cfg, err := apps.Parse("default_apps.yaml", bytes.ReplaceAll(defaultApps, []byte("{{self}}"), []byte(os.Args[0])), check)
			if err != nil {
				return nil, err
			}
			opts.Models, opts.OfflineFallback = cfg.GetModels(), true
		} else {
			cfg, err := apps.LoadFile(configPath, check)
			if err != nil {
				return nil, fmt.Errorf("apps file %s: %w", configPath, err)
			}
			opts.Models = cfg.GetModels()
		}
		return providers.New(opts).Model(ctx, name)
	}
}
