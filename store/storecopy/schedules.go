package storecopy

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrunner/agentrunner/store"
)

// copySchedules copies the schedules created through the API, each with
// its cursor, so that the target neither fires again the times the
// source fired nor loses one; the claims (the history of firings) stay
// behind. A schedule the target has already (a resumed copy) is kept.
// Stores that keep no schedules copy none. It returns how many it wrote.
func copySchedules(ctx context.Context, src Source, dst Target) (int, error) {
	from, ok1 := src.(store.ScheduleStore)
	to, ok2 := dst.(store.ScheduleStore)
	if !ok1 || !ok2 {
		return 0, nil
	}
	scheds, err := from.ListSchedules(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("list source schedules: %w", err)
	}
	n := 0
	for _, sc := range scheds {
		id := sc.GetScheduleId()
		st, err := from.ScheduleState(ctx, id)
		switch {
		case err == nil:
			// First, as CreateSchedule does: a scheduler of the target
			// that sees the schedule finds its cursor.
			if _, err := to.StartSchedule(ctx, id, st.Cursor); err != nil {
				return n, fmt.Errorf("schedule %s: %w", id, err)
			}
		case !errors.Is(err, store.ErrNotFound):
			return n, fmt.Errorf("schedule %s: %w", id, err)
		}
		err = to.CreateSchedule(ctx, sc)
		switch {
		case err == nil:
			n++
		case !errors.Is(err, store.ErrAlreadyExists):
			return n, fmt.Errorf("schedule %s: %w", id, err)
		}
	}
	return n, nil
}
