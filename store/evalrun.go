package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// EvalRunStore keeps the results of evaluations (EvalService), each one
// record written once, when every case has been scored. Implemented by
// *boltstore.Store and *pgstore.Store; storetest.EvalRuns is the contract.
type EvalRunStore interface {
	// CreateEvalRun stores r. ErrAlreadyExists when its app and user
	// already have an evaluation with its id; ErrInvalidArgument (from
	// CheckEvalRun) for a record that cannot be stored.
	CreateEvalRun(ctx context.Context, r *agentrunnerv1.EvalRun) error
	// GetEvalRun returns an evaluation; ErrNotFound when that app and user
	// have none with that id.
	GetEvalRun(ctx context.Context, app, user, evalRunID string) (*agentrunnerv1.EvalRun, error)
	// ListEvalRuns returns an app's evaluations, of one user or (user "")
	// of every user, newest first (create_time, then id descending), at
	// most limit of them (limit <= 0 means DefaultEvalRunLimit).
	ListEvalRuns(ctx context.Context, app, user string, limit int) ([]*agentrunnerv1.EvalRun, error)
}

// DefaultEvalRunLimit is ListEvalRuns' limit when none is given.
const DefaultEvalRunLimit = 50

// CheckEvalRun validates an evaluation a store is asked to write, for a
// store whose key parts pass check, and returns its create_time in Unix
// nanoseconds, by which the stores order evaluations.
func CheckEvalRun(r *agentrunnerv1.EvalRun, check KeyCheck) (createNanos int64, err error) {
	switch {
	case r == nil:
		return 0, fmt.Errorf("eval run is missing: %w", ErrInvalidArgument)
	case r.GetEvalRunId() == "":
		return 0, fmt.Errorf("eval_run_id is empty: %w", ErrInvalidArgument)
	case r.GetAppName() == "" || r.GetUserId() == "":
		return 0, fmt.Errorf("eval run %s: app_name and user_id are required: %w", r.GetEvalRunId(), ErrInvalidArgument)
	}
	if err := checkAll(check, r.GetAppName(), r.GetUserId(), r.GetEvalRunId()); err != nil {
		return 0, err
	}
	n, err := unixNanos(r.GetCreateTime())
	if err != nil {
		return 0, fmt.Errorf("eval run %s: %w", r.GetEvalRunId(), err)
	}
	return n, nil
}

// CheckEvalRunKey validates the arguments of GetEvalRun.
func CheckEvalRunKey(app, user, id string, check KeyCheck) error {
	if app == "" || user == "" || id == "" {
		return fmt.Errorf("app_name, user_id and eval_run_id are required: %w", ErrInvalidArgument)
	}
	return checkAll(check, app, user, id)
}

// SortEvalRuns orders evaluations newest first, as ListEvalRuns returns
// them, and keeps the first limit (DefaultEvalRunLimit when limit <= 0).
func SortEvalRuns(runs []*agentrunnerv1.EvalRun, limit int) []*agentrunnerv1.EvalRun {
	if limit <= 0 {
		limit = DefaultEvalRunLimit
	}
	slices.SortFunc(runs, func(a, b *agentrunnerv1.EvalRun) int {
		if c := b.GetCreateTime().AsTime().Compare(a.GetCreateTime().AsTime()); c != 0 {
			return c
		}
		return cmp.Compare(b.GetEvalRunId(), a.GetEvalRunId())
	})
	return runs[:min(len(runs), limit)]
}
