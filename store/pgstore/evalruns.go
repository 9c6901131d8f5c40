package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Evaluation results live in table eval_runs (migration 0010), one row
// per evaluation.

var _ store.EvalRunStore = (*Store)(nil)

// CreateEvalRun implements store.EvalRunStore.
func (s *Store) CreateEvalRun(ctx context.Context, r *agentrunnerv1.EvalRun) error {
	nanos, err := store.CheckEvalRun(r, checkPart)
	if err != nil {
		return err
	}
	v, err := r.MarshalVT()
	if err != nil {
		return fmt.Errorf("encode eval run %s: %w", r.GetEvalRunId(), err)
	}
	return s.query(ctx, func() error {
		tag, err := s.pool.Exec(ctx, `INSERT INTO eval_runs (app_name, user_id, eval_run_id, create_nanos, record)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
			r.GetAppName(), r.GetUserId(), r.GetEvalRunId(), nanos, v)
		if err != nil {
			return fmt.Errorf("write eval run %s: %w", r.GetEvalRunId(), err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("eval run %s: %w", r.GetEvalRunId(), store.ErrAlreadyExists)
		}
		return nil
	})
}

// GetEvalRun implements store.EvalRunStore.
func (s *Store) GetEvalRun(ctx context.Context, app, user, id string) (*agentrunnerv1.EvalRun, error) {
	if err := store.CheckEvalRunKey(app, user, id, checkPart); err != nil {
		return nil, err
	}
	var out *agentrunnerv1.EvalRun
	err := s.query(ctx, func() error {
		var b []byte
		err := s.pool.QueryRow(ctx, "SELECT record FROM eval_runs WHERE app_name = $1 AND user_id = $2 AND eval_run_id = $3",
			app, user, id).Scan(&b)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("eval run %s: %w", id, store.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("read eval run %s: %w", id, err)
		}
		out = &agentrunnerv1.EvalRun{}
		return proto.Unmarshal(b, out)
	})
	return out, err
}

// ListEvalRuns implements store.EvalRunStore.
func (s *Store) ListEvalRuns(ctx context.Context, app, user string, limit int) ([]*agentrunnerv1.EvalRun, error) {
	if err := store.CheckSessionList(app, user, checkPart); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = store.DefaultEvalRunLimit
	}
	var out []*agentrunnerv1.EvalRun
	err := s.query(ctx, func() error {
		rows, err := s.pool.Query(ctx, `SELECT record FROM eval_runs WHERE app_name = $1 AND ($2 = '' OR user_id = $2)
			ORDER BY create_nanos DESC, eval_run_id DESC LIMIT $3`, app, user, limit)
		if err != nil {
			return fmt.Errorf("list eval runs: %w", err)
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*agentrunnerv1.EvalRun, error) {
			var b []byte
			if err := row.Scan(&b); err != nil {
				return nil, err
			}
			r := &agentrunnerv1.EvalRun{}
			return r, proto.Unmarshal(b, r)
		})
		return err
	})
	return out, err
}
