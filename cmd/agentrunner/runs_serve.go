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
		r, ok := reg.Lookup(a.GetName())
		if !ok {
			continue
		}
		interrupted, requeued, err := r.Recover(ctx)
		if err != nil {
			return err
		}
		if interrupted+requeued > 0 {
			log.Info("recovered runs", "app", a.GetName(), "interrupted", interrupted, "requeued", requeued)
		}
	}
	return nil
}

// drainRuns stops every app from taking runs and waits up to d for the
// runs in progress; those still running then are interrupted.
func drainRuns(ctx context.Context, reg *apps.Registry, d time.Duration, log *slog.Logger) {
	dctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for _, a := range reg.List() {
		r, ok := reg.Lookup(a.GetName())
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Shutdown(dctx); err != nil {
				log.Warn("drain timeout over; interrupted the runs still in progress", "app", a.GetName(), "err", err)
			}
		}()
	}
	wg.Wait()
}

// gateClaims sets g on every app's runner: the runs it takes from the
// queue of a store that several replicas share count against the
// server's limit of runs in progress.
func gateClaims(reg *apps.Registry, g runner.ClaimGate) {
	for _, a := range reg.List() {
		if r, ok := reg.Lookup(a.GetName()); ok {
			r.SetClaimGate(g)
		}
	}
}
