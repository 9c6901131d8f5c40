package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/apps"
)

// recoverRuns lets every app recover the runs a crash or a shutdown left:
// running ones are marked interrupted, pending ones queued again.
func recoverRuns(ctx context.Context, reg *apps.Registry, log *slog.Logger) error {
	for _, a := range reg.List() {
		if err := recoverApp(ctx, reg, a.GetName(), log); err != nil {
			return err
		}
	}
	return nil
}

// recoverApp lets one app recover its runs, at the start or when a
// reload adds it.
func recoverApp(ctx context.Context, reg *apps.Registry, name string, log *slog.Logger) error {
	r, ok := reg.Lookup(name)
	if !ok {
		return nil
	}
	interrupted, requeued, err := r.Recover(ctx)
	if err != nil {
		return err
	}
	if interrupted+requeued > 0 {
		log.Info("recovered runs", "app", name, "interrupted", interrupted, "requeued", requeued)
	}
	return nil
}

// drainRuns stops every app from taking runs and waits up to d for the
// runs in progress; those still running then are interrupted. The apps a
// reload removed are drained too: their runs in flight went on.
func drainRuns(ctx context.Context, reg *apps.Registry, d time.Duration, log *slog.Logger) {
	dctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for _, r := range reg.Runners() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Shutdown(dctx); err != nil {
				log.Warn("drain timeout over; interrupted the runs still in progress", "app", r.AppName(), "err", err)
			}
		}()
	}
	wg.Wait()
}

// gateClaims sets g on every app's runner, and on those a reload adds:
// the runs it takes from the queue of a store that several replicas
// share count against the server's limit of runs in progress.
func gateClaims(reg *apps.Registry, g runner.ClaimGate) { reg.SetClaimGate(g) }
