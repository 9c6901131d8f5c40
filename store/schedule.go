package store

import (
	"context"
	"fmt"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// ScheduleStore keeps the schedules created through the API and, for
// every schedule (those of the apps file too, by id), the record of its
// firings: a cursor, the time up to which every time of the schedule is
// decided (fired or passed over), and one claim per fired time.
//
// The claim is what makes a time fire once across replicas: ClaimFire
// writes (schedule, time) and moves the cursor to the time in one
// transaction, and refuses a time at or before the cursor, so of two
// replicas racing for a time one gets ErrAlreadyExists. Implemented by
// both stores.
type ScheduleStore interface {
	// CreateSchedule stores an API schedule under its schedule_id (set
	// by the caller); ErrAlreadyExists when the id is taken.
	CreateSchedule(ctx context.Context, s *agentrunnerv1.Schedule) error
	// GetSchedule returns a stored schedule as created (its firing is
	// ScheduleState's); ErrNotFound.
	GetSchedule(ctx context.Context, id string) (*agentrunnerv1.Schedule, error)
	// ListSchedules returns the stored schedules of app, or of every app
	// when app is empty, by id.
	ListSchedules(ctx context.Context, app string) ([]*agentrunnerv1.Schedule, error)
	// DeleteSchedule deletes a stored schedule with its state and claims;
	// ErrNotFound.
	DeleteSchedule(ctx context.Context, id string) error
	// SetSchedulePaused sets a stored schedule's paused flag and returns
	// the schedule as stored; ErrNotFound.
	SetSchedulePaused(ctx context.Context, id string, paused bool) (*agentrunnerv1.Schedule, error)

	// StartSchedule returns schedule id's cursor, setting it to from
	// first when the schedule has none (its first sight): times up to
	// from are not the schedule's to fire.
	StartSchedule(ctx context.Context, id string, from time.Time) (time.Time, error)
	// ClaimFire claims time at of schedule id for holder: it records the
	// claim and moves the cursor to at, in one transaction. A time at or
	// before the cursor (claimed or passed over already) is
	// ErrAlreadyExists. A schedule without a cursor gets one.
	ClaimFire(ctx context.Context, id string, at time.Time, holder string) error
	// SkipTo moves the cursor of schedule id to at, passing over the
	// times before it unfired; a cursor already there stays.
	SkipTo(ctx context.Context, id string, at time.Time) error
	// FinishFire records what the claimed time at started: a run, or the
	// error that refused it. ErrNotFound when at was not claimed.
	FinishFire(ctx context.Context, id string, at time.Time, runID, errText string) error
	// ScheduleState returns the cursor and the latest firing of schedule
	// id; ErrNotFound when it has no cursor yet.
	ScheduleState(ctx context.Context, id string) (ScheduleState, error)
	// ListFires returns the latest claims of schedule id, newest first,
	// at most limit (capped at MaxPageSize).
	ListFires(ctx context.Context, id string, limit int) ([]ScheduleFire, error)
}

// ScheduleState is where a schedule's firing is.
type ScheduleState struct {
	// Cursor: every time up to it is decided.
	Cursor time.Time
	// Last is the latest claimed time (zero when none was) and what it
	// started.
	Last ScheduleFire
}

// ScheduleFire is one claimed time of a schedule.
type ScheduleFire struct {
	ScheduleID string
	Time       time.Time
	// Holder is the replica that claimed it.
	Holder string
	// Finished says FinishFire recorded its outcome: RunID, or Error.
	Finished bool
	RunID    string
	Error    string
}

// Schedule id bounds shared by both stores.
const MaxScheduleIDBytes = 256

// CheckSchedule validates a schedule a store is asked to keep.
func CheckSchedule(s *agentrunnerv1.Schedule, check KeyCheck) error {
	switch {
	case s == nil:
		return fmt.Errorf("schedule is missing: %w", ErrInvalidArgument)
	case s.GetAppName() == "":
		return fmt.Errorf("schedule %q: app_name is empty: %w", s.GetScheduleId(), ErrInvalidArgument)
	}
	if err := CheckScheduleID(s.GetScheduleId(), check); err != nil {
		return err
	}
	return checkAll(check, s.GetAppName())
}

// CheckScheduleID validates a schedule id.
func CheckScheduleID(id string, check KeyCheck) error {
	switch {
	case id == "":
		return fmt.Errorf("schedule_id is empty: %w", ErrInvalidArgument)
	case len(id) > MaxScheduleIDBytes:
		return fmt.Errorf("schedule_id is %d bytes, over %d: %w", len(id), MaxScheduleIDBytes, ErrInvalidArgument)
	}
	return checkAll(check, id)
}
