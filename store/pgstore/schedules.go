package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

var _ store.ScheduleStore = (*Store)(nil)

// CreateSchedule implements store.ScheduleStore.
func (s *Store) CreateSchedule(ctx context.Context, sc *agentrunnerv1.Schedule) error {
	if err := store.CheckSchedule(sc, checkText); err != nil {
		return err
	}
	v, err := proto.Marshal(sc)
	if err != nil {
		return fmt.Errorf("encode schedule: %w", err)
	}
	return s.query(ctx, func() error {
		tag, err := s.pool.Exec(ctx, `INSERT INTO schedules (schedule_id, app_name, record) VALUES ($1, $2, $3)
			ON CONFLICT (schedule_id) DO NOTHING`, sc.GetScheduleId(), sc.GetAppName(), v)
		if err == nil && tag.RowsAffected() == 0 {
			return fmt.Errorf("schedule %s: %w", sc.GetScheduleId(), store.ErrAlreadyExists)
		}
		return err
	})
}

// GetSchedule implements store.ScheduleStore.
func (s *Store) GetSchedule(ctx context.Context, id string) (*agentrunnerv1.Schedule, error) {
	if err := store.CheckScheduleID(id, checkText); err != nil {
		return nil, err
	}
	sc := &agentrunnerv1.Schedule{}
	err := s.query(ctx, func() error {
		var v []byte
		err := s.pool.QueryRow(ctx, `SELECT record FROM schedules WHERE schedule_id = $1`, id).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("schedule %s: %w", id, store.ErrNotFound)
		} else if err != nil {
			return err
		}
		return proto.Unmarshal(v, sc)
	})
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// ListSchedules implements store.ScheduleStore.
func (s *Store) ListSchedules(ctx context.Context, app string) ([]*agentrunnerv1.Schedule, error) {
	if err := checkText(app); err != nil {
		return nil, err
	}
	var out []*agentrunnerv1.Schedule
	err := s.query(ctx, func() error {
		rows, err := s.pool.Query(ctx, `SELECT record FROM schedules WHERE $1 = '' OR app_name = $1 ORDER BY schedule_id`, app)
		if err != nil {
			return err
		}
		vs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil {
			return err
		}
		for _, v := range vs {
			sc := &agentrunnerv1.Schedule{}
			if err := proto.Unmarshal(v, sc); err != nil {
				return fmt.Errorf("decode schedule: %w", err)
			}
			out = append(out, sc)
		}
		return nil
	})
	return out, err
}

// DeleteSchedule implements store.ScheduleStore.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	if err := store.CheckScheduleID(id, checkText); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM schedules WHERE schedule_id = $1`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("schedule %s: %w", id, store.ErrNotFound)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM schedule_state WHERE schedule_id = $1`, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM schedule_fires WHERE schedule_id = $1`, id)
		return err
	})
}

// StartSchedule implements store.ScheduleStore.
func (s *Store) StartSchedule(ctx context.Context, id string, from time.Time) (time.Time, error) {
	if err := store.CheckScheduleID(id, checkText); err != nil {
		return time.Time{}, err
	}
	var cursor int64
	err := s.query(ctx, func() error {
		// The no-op update makes RETURNING give the row that won.
		return s.pool.QueryRow(ctx, `INSERT INTO schedule_state (schedule_id, cursor_ns) VALUES ($1, $2)
			ON CONFLICT (schedule_id) DO UPDATE SET cursor_ns = schedule_state.cursor_ns RETURNING cursor_ns`,
			id, from.UnixNano()).Scan(&cursor)
	})
	return time.Unix(0, cursor).UTC(), err
}

// ClaimFire implements store.ScheduleStore. The state row's lock orders
// replicas racing for the schedule: the second sees the first's cursor.
func (s *Store) ClaimFire(ctx context.Context, id string, at time.Time, holder string) error {
	if err := store.CheckScheduleID(id, checkText); err != nil {
		return err
	}
	if err := checkText(holder); err != nil {
		return err
	}
	n := at.UnixNano()
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var cursor int64
		err := tx.QueryRow(ctx, `INSERT INTO schedule_state (schedule_id, cursor_ns) VALUES ($1, $2::bigint - 1)
			ON CONFLICT (schedule_id) DO UPDATE SET cursor_ns = schedule_state.cursor_ns RETURNING cursor_ns`,
			id, n).Scan(&cursor)
		if err != nil {
			return fmt.Errorf("lock schedule state: %w", err)
		}
		if n <= cursor {
			return fmt.Errorf("schedule %s time %s: decided already (cursor %s): %w", id, at.UTC().Format(time.RFC3339Nano), time.Unix(0, cursor).UTC().Format(time.RFC3339Nano), store.ErrAlreadyExists)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schedule_fires (schedule_id, time_ns, holder) VALUES ($1, $2, $3)`, id, n, holder); err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		_, err = tx.Exec(ctx, `UPDATE schedule_state SET cursor_ns = $2, last_time_ns = $2 WHERE schedule_id = $1`, id, n)
		return err
	})
}

// SkipTo implements store.ScheduleStore.
func (s *Store) SkipTo(ctx context.Context, id string, at time.Time) error {
	if err := store.CheckScheduleID(id, checkText); err != nil {
		return err
	}
	return s.query(ctx, func() error {
		_, err := s.pool.Exec(ctx, `INSERT INTO schedule_state (schedule_id, cursor_ns) VALUES ($1, $2)
			ON CONFLICT (schedule_id) DO UPDATE SET cursor_ns = greatest(schedule_state.cursor_ns, excluded.cursor_ns)`,
			id, at.UnixNano())
		return err
	})
}

// FinishFire implements store.ScheduleStore.
func (s *Store) FinishFire(ctx context.Context, id string, at time.Time, runID, errText string) error {
	if err := store.CheckScheduleID(id, checkText); err != nil {
		return err
	}
	for _, t := range []string{runID, errText} {
		if err := checkText(t); err != nil {
			return err
		}
	}
	return s.query(ctx, func() error {
		tag, err := s.pool.Exec(ctx, `UPDATE schedule_fires SET finished = true, run_id = $3, error = $4
			WHERE schedule_id = $1 AND time_ns = $2`, id, at.UnixNano(), runID, errText)
		if err == nil && tag.RowsAffected() == 0 {
			return fmt.Errorf("schedule %s time %s: not claimed: %w", id, at.UTC().Format(time.RFC3339Nano), store.ErrNotFound)
		}
		return err
	})
}

// ScheduleState implements store.ScheduleStore.
func (s *Store) ScheduleState(ctx context.Context, id string) (store.ScheduleState, error) {
	if err := store.CheckScheduleID(id, checkText); err != nil {
		return store.ScheduleState{}, err
	}
	var (
		out            store.ScheduleState
		cursor, lastNs int64
	)
	err := s.query(ctx, func() error {
		err := s.pool.QueryRow(ctx, `SELECT cursor_ns, last_time_ns FROM schedule_state WHERE schedule_id = $1`, id).Scan(&cursor, &lastNs)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("schedule %s has no state: %w", id, store.ErrNotFound)
		} else if err != nil {
			return err
		}
		out.Cursor = time.Unix(0, cursor).UTC()
		if lastNs == 0 {
			return nil
		}
		f, err := scanFire(s.pool.QueryRow(ctx, `SELECT time_ns, holder, finished, run_id, error FROM schedule_fires
			WHERE schedule_id = $1 AND time_ns = $2`, id, lastNs), id)
		out.Last = f
		return err
	})
	return out, err
}

func scanFire(row pgx.Row, id string) (store.ScheduleFire, error) {
	f := store.ScheduleFire{ScheduleID: id}
	var n int64
	if err := row.Scan(&n, &f.Holder, &f.Finished, &f.RunID, &f.Error); err != nil {
		return f, err
	}
	f.Time = time.Unix(0, n).UTC()
	return f, nil
}

// ListFires implements store.ScheduleStore.
func (s *Store) ListFires(ctx context.Context, id string, limit int) ([]store.ScheduleFire, error) {
	if err := store.CheckScheduleID(id, checkText); err != nil {
		return nil, err
	}
	var out []store.ScheduleFire
	err := s.query(ctx, func() error {
		rows, err := s.pool.Query(ctx, `SELECT time_ns, holder, finished, run_id, error FROM schedule_fires
			WHERE schedule_id = $1 ORDER BY time_ns DESC LIMIT $2`, id, store.Page{Size: limit}.Limit())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			f, err := scanFire(rows, id)
			if err != nil {
				return err
			}
			out = append(out, f)
		}
		return rows.Err()
	})
	return out, err
}

// SetSchedulePaused implements store.ScheduleStore.
func (s *Store) SetSchedulePaused(ctx context.Context, id string, paused bool) (*agentrunnerv1.Schedule, error) {
	if err := store.CheckScheduleID(id, checkText); err != nil {
		return nil, err
	}
	sc := &agentrunnerv1.Schedule{}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var v []byte
		err := tx.QueryRow(ctx, `SELECT record FROM schedules WHERE schedule_id = $1 FOR UPDATE`, id).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("schedule %s: %w", id, store.ErrNotFound)
		} else if err != nil {
			return err
		}
		if err := proto.Unmarshal(v, sc); err != nil {
			return fmt.Errorf("decode schedule: %w", err)
		}
		sc.Paused = paused
		if v, err = proto.Marshal(sc); err != nil {
			return fmt.Errorf("encode schedule: %w", err)
		}
		_, err = tx.Exec(ctx, `UPDATE schedules SET record = $2 WHERE schedule_id = $1`, id, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return sc, nil
}
