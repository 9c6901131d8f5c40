package pgstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// acrossToken continues ListRunsOf across sessions after the run named by
// its place in the listing order.
type acrossToken struct {
	App    string `json:"a"`
	User   string `json:"u"`
	Across bool   `json:"x"` // tells it apart from a runToken
	Nanos  int64  `json:"t"`
	RunID  string `json:"r"`
}

// ListRunsOf implements store.RunStore. Across sessions it reads index
// runs_by_user or runs_by_app backwards, or their partial twins of active
// runs (migration 0005) when the filter keeps only active statuses.
func (s *Store) ListRunsOf(ctx context.Context, f store.RunFilter, page store.Page) ([]*agentrunnerv1.Run, string, error) {
	if err := s.check(ctx); err != nil {
		return nil, "", err
	}
	if err := f.Validate(checkPart); err != nil {
		return nil, "", err
	}
	var statuses []int32
	for _, st := range f.Statuses {
		statuses = append(statuses, int32(st))
	}
	if f.Session != "" {
		return s.listSessionRuns(ctx, store.SessionKey{App: f.App, User: f.User, Session: f.Session}, statuses, page)
	}
	q, args, err := acrossQuery(f, statuses, page)
	if err != nil {
		return nil, "", err
	}
	var (
		out  []*agentrunnerv1.Run
		next string
	)
	err = s.query(ctx, func() error {
		out, next = nil, ""
		rows, err := s.pool.Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("list runs: %w", err)
		}
		var (
			nanos int64
			id    string
			b     []byte
			last  acrossToken
		)
		_, err = pgx.ForEachRow(rows, []any{&nanos, &id, &b}, func() error {
			if len(out) == page.Limit() {
				next = encodeToken(last) // a row beyond the page: there is more
				return nil
			}
			last = acrossToken{App: f.App, User: f.User, Across: true, Nanos: nanos, RunID: id}
			rec, err := decodeRun(b)
			out = append(out, rec)
			return err
		})
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// acrossQuery builds the query of one page of a listing across sessions.
// The filter of active runs is spelt as the partial indexes' predicate,
// so that the planner may use them.
func acrossQuery(f store.RunFilter, statuses []int32, page store.Page) (string, []any, error) {
	args := []any{f.App, page.Limit() + 1}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	where := "app_name = $1"
	if f.User != "" {
		where += " AND user_id = " + arg(f.User)
	}
	if f.OnlyActive() {
		where += " AND status IN (1, 2, 3)"
	}
	if len(statuses) > 0 {
		where += " AND status = ANY(" + arg(statuses) + "::integer[])"
	}
	if page.Token != "" {
		var tok acrossToken
		if err := decodeToken(page.Token, &tok); err != nil {
			return "", nil, err
		}
		if !tok.Across || tok.App != f.App || tok.User != f.User || tok.RunID == "" {
			return "", nil, fmt.Errorf("page_token belongs to another listing: %w", store.ErrInvalidArgument)
		}
		where += " AND (create_nanos, run_id) < (" + arg(tok.Nanos) + ", " + arg(tok.RunID) + ")"
	}
	q := "SELECT create_nanos, run_id, record FROM runs WHERE " + where +
		" ORDER BY create_nanos DESC, run_id DESC LIMIT $2"
	return q, args, nil
}

// backfillRunStatus fills in the status column (migration 0005) of the
// runs written before it, from their records, a batch at a time: once,
// when a store opens a database that has such rows. A replica of an older
// binary still writing meanwhile leaves status as it was: upgrade every
// replica before relying on listings across sessions.
func backfillRunStatus(ctx context.Context, s *Store) error {
	const batch = 500
	for {
		rows, err := s.pool.Query(ctx, "SELECT run_id, record FROM runs WHERE status IS NULL LIMIT $1", batch)
		if err != nil {
			return fmt.Errorf("backfill run status: %w", err)
		}
		var ids []string
		var sts []int32
		var id string
		var b []byte
		_, err = pgx.ForEachRow(rows, []any{&id, &b}, func() error {
			rec, err := decodeRun(b)
			if err != nil {
				return fmt.Errorf("run %s: %w", id, err)
			}
			ids, sts = append(ids, id), append(sts, int32(rec.GetStatus()))
			return nil
		})
		if err != nil {
			return fmt.Errorf("backfill run status: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		tag, err := s.pool.Exec(ctx, `UPDATE runs SET status = v.status FROM unnest($1::text[], $2::integer[]) AS v(run_id, status)
			WHERE runs.run_id = v.run_id AND runs.status IS NULL`, ids, sts)
		if err != nil {
			return fmt.Errorf("backfill run status: %w", err)
		}
		if tag.RowsAffected() == 0 {
			// Another store filled these in meanwhile; none may be left
			// for ever unfilled, so look again only if this one did work.
			return nil
		}
		s.opts.Logger.Info("filled in the status of runs stored before migration 0005", "runs", len(ids))
	}
}
