package front

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// GetRun returns a run's record.
func (d *Desk) GetRun(ctx context.Context, req *servicev1.GetRunRequest) (*servicev1.GetRunResponse, error) {
	app, err := d.runApp(ctx, req.GetRunId())
	if err != nil {
		return nil, err
	}
	run, err := app.GetRun(ctx, req.GetRunId())
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.GetRunResponse{Run: run}, nil
}

// ListRuns lists runs newest first: a session's, a user's across their
// sessions, or (admins only, see authz.go) every user's of the app.
func (d *Desk) ListRuns(ctx context.Context, req *servicev1.ListRunsRequest) (*servicev1.ListRunsResponse, error) {
	f, err := validateListRuns(req)
	if err != nil {
		return nil, err
	}
	if err := d.checkPage(req); err != nil {
		return nil, err
	}
	app, ok := d.apps.Lookup(f.App)
	if !ok {
		return nil, unknownApp(f.App)
	}
	runs, next, err := app.ListRunsOf(ctx, f, store.Page{Size: int(req.GetPageSize()), Token: req.GetPageToken()})
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.ListRunsResponse{Runs: runs, NextPageToken: next}, nil
}

// CancelRun cancels a run and returns its record once that took effect.
func (d *Desk) CancelRun(ctx context.Context, req *servicev1.CancelRunRequest) (*servicev1.CancelRunResponse, error) {
	app, err := d.runApp(ctx, req.GetRunId())
	if err != nil {
		return nil, err
	}
	run, err := app.Cancel(ctx, req.GetRunId())
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.CancelRunResponse{Run: run}, nil
}

// runApp returns the runner of the app a run belongs to: one that has it
// live, or the one its stored record names. With authentication on it is
// also where run-id RPCs are authorized: a non-admin caller gets the same
// PermissionDenied for a run that does not exist and for one of a user or
// app it is not granted, so the answer never tells which.
func (d *Desk) runApp(ctx context.Context, runID string) (AppRunner, error) {
	if err := checkID("run_id", runID); err != nil {
		return nil, err
	}
	app, err := d.findRunApp(ctx, runID)
	p := principalFrom(ctx)
	if p == nil || p.Admin {
		return app, err
	}
	if err != nil && status.Code(err) != codes.NotFound {
		return nil, err
	}
	if err == nil {
		rec, gerr := app.GetRun(ctx, runID)
		switch {
		case gerr == nil && p.MayUse(rec.GetAppName(), rec.GetUserId()):
			return app, nil
		case gerr != nil && !errors.Is(gerr, store.ErrNotFound):
			return nil, d.toStatus(ctx, gerr)
		}
	}
	return nil, d.authz.deny(ctx, codes.PermissionDenied, p.Name, methodOf(ctx), "no run "+strconv.Quote(runID)+" this principal may use")
}

func (d *Desk) findRunApp(ctx context.Context, runID string) (AppRunner, error) {
	for _, a := range d.apps.List() {
		if app, ok := d.apps.Lookup(a.GetName()); ok && app.HasLiveRun(runID) {
			return app, nil
		}
	}
	rec, err := d.store.GetRun(ctx, runID)
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	app, ok := d.apps.Lookup(rec.GetAppName())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "run %s belongs to app %q, which is not served here", runID, rec.GetAppName())
	}
	return app, nil
}

func unknownApp(name string) error {
	return status.Errorf(codes.NotFound, "app %q is not served here; ListApps shows the apps that are", name)
}

func (d *Desk) ListApps(ctx context.Context, _ *servicev1.ListAppsRequest) (*servicev1.ListAppsResponse, error) {
	apps := slices.Clone(d.apps.List())
	// A principal sees the apps it may use.
	if p := principalFrom(ctx); p != nil {
		apps = slices.DeleteFunc(apps, func(a *agentrunnerv1.App) bool { return !p.MayUseApp(a.GetName()) })
	}
	slices.SortFunc(apps, func(a, b *agentrunnerv1.App) int { return strings.Compare(a.GetName(), b.GetName()) })
	return &servicev1.ListAppsResponse{Apps: apps}, nil
}
