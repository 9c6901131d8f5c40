package store

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// CheckRun validates a run record a store is asked to write, for a store
// whose key parts pass check, and returns its create_time in Unix
// nanoseconds, by which every store orders a session's runs. The stores
// share it so that they refuse the same records with the same errors.
func CheckRun(run *agentrunnerv1.Run, check KeyCheck) (createNanos int64, err error) {
	switch {
	case run == nil:
		return 0, fmt.Errorf("run is missing: %w", ErrInvalidArgument)
	case run.GetRunId() == "":
		return 0, fmt.Errorf("run_id is empty: %w", ErrInvalidArgument)
	}
	if err := ValidateKey(RunKey(run), check); err != nil {
		return 0, fmt.Errorf("run %s: %w", run.GetRunId(), err)
	}
	if err := checkAll(check, run.GetRunId(), run.GetRequestId()); err != nil {
		return 0, err
	}
	n, err := unixNanos(run.GetCreateTime())
	if err != nil {
		return 0, fmt.Errorf("run %s: %w", run.GetRunId(), err)
	}
	return n, nil
}

// unixNanos returns a create_time as Unix nanoseconds; it must be set and
// representable, or runs could not be ordered by it.
func unixNanos(ts *timestamppb.Timestamp) (int64, error) {
	if ts == nil {
		return 0, fmt.Errorf("create_time is missing: %w", ErrInvalidArgument)
	}
	if err := ts.CheckValid(); err != nil {
		return 0, fmt.Errorf("create_time: %v: %w", err, ErrInvalidArgument)
	}
	t := ts.AsTime()
	n := t.UnixNano()
	if !time.Unix(0, n).Equal(t) {
		return 0, fmt.Errorf("create_time %s is out of range: %w", t, ErrInvalidArgument)
	}
	return n, nil
}

// CheckRunOf refuses a run record written with an event of session k
// (AppendRunEvent) that belongs to another session: the two are written
// together only because they are of one session.
func CheckRunOf(run *agentrunnerv1.Run, k SessionKey) error {
	if rk := RunKey(run); rk != k {
		return fmt.Errorf("run %s belongs to session %s, not %s: %w", run.GetRunId(), rk, k, ErrInvalidArgument)
	}
	return nil
}

// RunFilter selects the runs ListRunsOf lists.
type RunFilter struct {
	// App is required.
	App string
	// User, when empty, selects every user of App (Session must then be
	// empty too).
	User string
	// Session, when empty, selects every session of User.
	Session string
	// Statuses, when not empty, keeps only runs with one of these
	// statuses.
	Statuses []agentrunnerv1.RunStatus
}

// Validate reports an ErrInvalidArgument for a filter no listing serves.
func (f RunFilter) Validate(check KeyCheck) error {
	switch {
	case f.App == "":
		return fmt.Errorf("app_name is empty: %w", ErrInvalidArgument)
	case f.User == "" && f.Session != "":
		return fmt.Errorf("session_id %q without a user_id: %w", f.Session, ErrInvalidArgument)
	}
	if err := checkAll(check, f.App, f.User, f.Session); err != nil {
		return err
	}
	for _, st := range f.Statuses {
		if _, ok := agentrunnerv1.RunStatus_name[int32(st)]; !ok || st == agentrunnerv1.RunStatus_RUN_STATUS_UNSPECIFIED {
			return fmt.Errorf("run status %d is not a status a run can have: %w", st, ErrInvalidArgument)
		}
	}
	return nil
}

// Keeps reports whether the filter's statuses keep a run of status st.
func (f RunFilter) Keeps(st agentrunnerv1.RunStatus) bool {
	return len(f.Statuses) == 0 || slices.Contains(f.Statuses, st)
}

// Active reports whether a run of this status is in flight or waits on
// its caller: what the console's runs board shows, and what every store
// keeps an index of across sessions.
func Active(st agentrunnerv1.RunStatus) bool {
	switch st {
	case agentrunnerv1.RunStatus_RUN_STATUS_PENDING, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING, agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED:
		return true
	}
	return false
}

// OnlyActive reports whether the filter keeps active runs only, so that a
// store may walk its index of active runs instead of every run.
func (f RunFilter) OnlyActive() bool {
	return len(f.Statuses) > 0 && !slices.ContainsFunc(f.Statuses, func(st agentrunnerv1.RunStatus) bool { return !Active(st) })
}
