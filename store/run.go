package store

import (
	"fmt"
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
