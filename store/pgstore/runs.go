package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// unfinished reports whether a run of this status is listed by
// ListUnfinishedRuns.
func unfinished(st agentrunnerv1.RunStatus) bool {
	return st == agentrunnerv1.RunStatus_RUN_STATUS_PENDING || st == agentrunnerv1.RunStatus_RUN_STATUS_RUNNING
}

// runWrite is a run record ready to be written: checked outside the
// transaction, a copy of its own.
type runWrite struct {
	rec   *agentrunnerv1.Run
	k     store.SessionKey
	nanos int64 // create_time in Unix nanoseconds
	// copied: a record a store copy writes, which queues no webhook
	// delivery (the source's run called back already).
	copied bool
}

func prepareRun(run *agentrunnerv1.Run) (*runWrite, error) {
	nanos, err := store.CheckRun(run, checkPart)
	if err != nil {
		return nil, err
	}
	return &runWrite{rec: run.CloneVT(), k: store.RunKey(run), nanos: nanos}, nil
}

// SQL of a run record's write, shared by the transaction and the
// pipelined paths (pipeline.go).
const (
	// sqlRunOf reads the stored run of an id, locking it.
	sqlRunOf = "SELECT app_name, user_id, session_id, create_nanos, coalesce(status, 0) FROM runs WHERE run_id = $1 FOR UPDATE"
	// sqlRequestHolder reads the other run of a session holding a request_id.
	sqlRequestHolder = "SELECT run_id FROM runs WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND request_id = $4 AND run_id <> $5"
	// sqlPutRun writes a record; a rewrite keeps its anchor and create_nanos.
	sqlPutRun = `INSERT INTO runs (run_id, app_name, user_id, session_id, anchor, create_nanos, request_id, unfinished, record, status)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (run_id) DO UPDATE SET request_id = excluded.request_id, unfinished = excluded.unfinished, record = excluded.record, status = excluded.status`
)

// storedRun is what a write reads of the stored record of its run id.
type storedRun struct {
	found     bool
	key       store.SessionKey
	nanos     int64
	status    agentrunnerv1.RunStatus
	reqHolder string // the other run holding the request_id, if any
}

// scan reads the result of sqlRunOf.
func (r *storedRun) scan(row pgx.Row) error {
	var st int32
	err := row.Scan(&r.key.App, &r.key.User, &r.key.Session, &r.nanos, &st)
	r.status = agentrunnerv1.RunStatus(st)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	r.found = err == nil
	return err
}

// scanHolder reads the result of sqlRequestHolder.
func (r *storedRun) scanHolder(row pgx.Row) error {
	if err := row.Scan(&r.reqHolder); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	return nil
}

// runPlan is a planned write of a run record: the record as it is
// written, sqlPutRun's arguments, and sqlQueueDelivery's when the write
// calls back (store.QueuesDelivery).
type runPlan struct {
	rec      *agentrunnerv1.Run
	args     []any
	delivery []any
}

// queue adds the plan's statements to b.
func (p *runPlan) queue(b *pgx.Batch) {
	b.Queue(sqlPutRun, p.args...)
	if p.delivery != nil {
		b.Queue(sqlQueueDelivery, p.delivery...)
	}
}

// plan returns the record w writes over stored, and the arguments of
// sqlPutRun for it (its session's last sequence being anchor); a seq
// other than zero is stored as last_sequence (and as first_sequence when
// that is zero). The run id must not be another session's, and the
// request_id not another run's (ErrAlreadyExists).
func (w *runWrite) plan(stored storedRun, anchor, seq uint64) (*runPlan, error) {
	rec := w.rec.CloneVT()
	if seq != 0 {
		rec.LastSequence = seq
		if rec.FirstSequence == 0 {
			rec.FirstSequence = seq
		}
	}
	switch {
	case !stored.found:
	case stored.key != w.k:
		return nil, fmt.Errorf("run_id %s is a run of another session: %w", rec.GetRunId(), store.ErrAlreadyExists)
	case stored.nanos != w.nanos:
		// A record's create_time never changes once written.
		rec.CreateTime = timestamppb.New(time.Unix(0, stored.nanos))
	}
	var req *string
	if r := rec.GetRequestId(); r != "" {
		if stored.reqHolder != "" {
			return nil, fmt.Errorf("request_id %q is held by run %s: %w", r, stored.reqHolder, store.ErrAlreadyExists)
		}
		req = &r
	}
	b, err := proto.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("marshal run %s: %w", rec.GetRunId(), err)
	}
	p := &runPlan{rec: rec, args: []any{rec.GetRunId(), w.k.App, w.k.User, w.k.Session, int64(anchor), w.nanos, req, unfinished(rec.GetStatus()), b, int32(rec.GetStatus())}}
	if !w.copied && store.QueuesDelivery(rec, stored.found, stored.status) {
		if p.delivery, err = deliveryArgs(store.NewDelivery(rec, time.Now())); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// putRunTx writes w's record in tx, which holds its session's row lock
// (the session's last sequence is anchor), and returns it as stored (see
// runWrite.plan).
func putRunTx(ctx context.Context, tx pgx.Tx, w *runWrite, anchor, seq uint64) (*agentrunnerv1.Run, error) {
	var stored storedRun
	if err := stored.scan(tx.QueryRow(ctx, sqlRunOf, w.rec.GetRunId())); err != nil {
		return nil, fmt.Errorf("read run %s: %w", w.rec.GetRunId(), err)
	}
	if r := w.rec.GetRequestId(); r != "" {
		if err := stored.scanHolder(tx.QueryRow(ctx, sqlRequestHolder, w.k.App, w.k.User, w.k.Session, r, w.rec.GetRunId())); err != nil {
			return nil, fmt.Errorf("read request_id %q: %w", r, err)
		}
	}
	p, err := w.plan(stored, anchor, seq)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, sqlPutRun, p.args...); err != nil {
		return nil, fmt.Errorf("write run %s: %w", p.rec.GetRunId(), err)
	}
	if p.delivery != nil {
		if _, err := tx.Exec(ctx, sqlQueueDelivery, p.delivery...); err != nil {
			return nil, fmt.Errorf("queue the webhook delivery of run %s: %w", p.rec.GetRunId(), err)
		}
	}
	return p.rec, nil
}

// AppendRunEvent implements store.RunStore.
func (s *Store) AppendRunEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event, run *agentrunnerv1.Run) (*agentrunnerv1.Event, *agentrunnerv1.Run, error) {
	if err := s.check(ctx); err != nil {
		return nil, nil, err
	}
	ew, err := s.prepareEvent(k, ev, true)
	if err != nil {
		return nil, nil, err
	}
	rw, err := prepareRun(run)
	if err != nil {
		return nil, nil, err
	}
	if err := store.CheckRunOf(run, k); err != nil {
		return nil, nil, err
	}
	if !ew.shared() {
		p := &pipeWrite{k: k, ev: &ew, run: rw}
		if err := s.pipelined(ctx, p); err != nil {
			return nil, nil, err
		}
		return p.stored, p.storedRun, nil
	}
	var (
		outEv  *agentrunnerv1.Event
		outRun *agentrunnerv1.Run
	)
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		sess, err := lockSession(ctx, tx, k)
		if err != nil {
			return err
		}
		if outEv, err = s.appendTx(ctx, tx, k, sess, ew); err != nil {
			return err
		}
		outRun, err = putRunTx(ctx, tx, rw, sess.GetLastSequence(), outEv.GetSequence())
		if err != nil || outRun.GetRunId() == outEv.GetInvocationId() {
			return err // appendTx told of the run
		}
		return notifyTx(ctx, tx, chanRun, runPayload(outRun.GetRunId(), outEv.GetSequence()))
	})
	if err != nil {
		return nil, nil, err
	}
	return outEv, outRun, nil
}

// PutRun implements store.RunStore.
func (s *Store) PutRun(ctx context.Context, run *agentrunnerv1.Run) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	w, err := prepareRun(run)
	if err != nil {
		return err
	}
	return s.putRun(ctx, w, false)
}

// putRun writes a record on its own; lazy skips waiting for the WAL
// flush (PutRunLater).
func (s *Store) putRun(ctx context.Context, w *runWrite, lazy bool) error {
	return s.pipelined(ctx, &pipeWrite{k: w.k, run: w, lazy: lazy})
}

// PutRunLater implements store.RunStore. The record is written before it
// returns, in a transaction whose commit waits for no WAL flush: it costs
// a round trip but no fsync, reads see it at once, and a later write of
// the run wins. A record that can never be written (see PutRun), one of
// a deleted session, or one queued after Close is logged and dropped.
func (s *Store) PutRunLater(run *agentrunnerv1.Run) {
	w, err := prepareRun(run)
	if err == nil && s.closed.Load() {
		err = store.ErrClosed
	}
	if err != nil {
		s.opts.Logger.Error("run record not queued", "run", run.GetRunId(), "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.LaterTimeout)
	defer cancel()
	switch err := s.putRun(ctx, w, true); {
	case err == nil:
	case errors.Is(err, store.ErrNotFound):
		s.opts.Logger.Debug("queued run record dropped: its session is gone", "run", run.GetRunId(), "err", err)
	default:
		s.opts.Logger.Error("queued run record not written", "run", run.GetRunId(), "err", err)
	}
}

func decodeRun(v []byte) (*agentrunnerv1.Run, error) {
	rec := &agentrunnerv1.Run{}
	if err := proto.Unmarshal(v, rec); err != nil {
		return nil, fmt.Errorf("decode run: %w", err)
	}
	return rec, nil
}

// GetRun implements store.RunStore.
func (s *Store) GetRun(ctx context.Context, runID string) (*agentrunnerv1.Run, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if runID == "" {
		return nil, fmt.Errorf("run_id is empty: %w", store.ErrInvalidArgument)
	}
	if err := checkParts(runID); err != nil {
		return nil, err
	}
	var out *agentrunnerv1.Run
	err := s.query(ctx, func() error {
		var b []byte
		err := s.pool.QueryRow(ctx, "SELECT record FROM runs WHERE run_id = $1", runID).Scan(&b)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("read run %s: %w", runID, err)
		}
		out, err = decodeRun(b)
		return err
	})
	return out, err
}

// FindRunByRequest implements store.RunStore.
func (s *Store) FindRunByRequest(ctx context.Context, k store.SessionKey, requestID string) (*agentrunnerv1.Run, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := store.CheckRequestKey(k, requestID, checkPart); err != nil {
		return nil, err
	}
	var out *agentrunnerv1.Run
	err := s.query(ctx, func() error {
		var b []byte
		err := s.pool.QueryRow(ctx, "SELECT record FROM runs WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND request_id = $4",
			k.App, k.User, k.Session, requestID).Scan(&b)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("request_id %q in session %s: %w", requestID, k, store.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("find run by request: %w", err)
		}
		out, err = decodeRun(b)
		return err
	})
	return out, err
}

// ListRuns implements store.RunStore: a backward walk of the session's
// range of index runs_by_session.
func (s *Store) ListRuns(ctx context.Context, k store.SessionKey, page store.Page) ([]*agentrunnerv1.Run, string, error) {
	if err := s.check(ctx); err != nil {
		return nil, "", err
	}
	if err := validateKey(k); err != nil {
		return nil, "", err
	}
	return s.listSessionRuns(ctx, k, nil, page)
}

// listSessionRuns is ListRuns of the runs of session k with one of
// statuses (every run when empty).
func (s *Store) listSessionRuns(ctx context.Context, k store.SessionKey, statuses []int32, page store.Page) ([]*agentrunnerv1.Run, string, error) {
	// A nil statuses is NULL: every status.
	const where = " AND ($5::integer[] IS NULL OR status = ANY($5::integer[]))"
	if len(statuses) == 0 {
		statuses = nil
	}
	q := `SELECT anchor, create_nanos, run_id, record FROM runs WHERE app_name = $1 AND user_id = $2 AND session_id = $3` + where + `
		ORDER BY anchor DESC, create_nanos DESC, run_id DESC LIMIT $4`
	args := []any{k.App, k.User, k.Session, page.Limit() + 1, statuses}
	if page.Token != "" {
		var tok runToken
		if err := decodeToken(page.Token, &tok); err != nil {
			return nil, "", err
		}
		if tok.App != k.App || tok.User != k.User || tok.Session != k.Session || tok.RunID == "" {
			return nil, "", fmt.Errorf("page_token belongs to another listing: %w", store.ErrInvalidArgument)
		}
		q = `SELECT anchor, create_nanos, run_id, record FROM runs WHERE app_name = $1 AND user_id = $2 AND session_id = $3` + where + `
		AND (anchor, create_nanos, run_id) < ($6, $7, $8)
		ORDER BY anchor DESC, create_nanos DESC, run_id DESC LIMIT $4`
		args = append(args, int64(tok.Anchor), tok.Nanos, tok.RunID)
	}
	var (
		out  []*agentrunnerv1.Run
		next string
	)
	err := s.query(ctx, func() error {
		if err := sessionExists(ctx, s.pool, k); err != nil {
			return err
		}
		rows, err := s.pool.Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("list runs: %w", err)
		}
		var (
			anchor, nanos int64
			id            string
			b             []byte
		)
		var last runToken // the place of the last run listed
		_, err = pgx.ForEachRow(rows, []any{&anchor, &nanos, &id, &b}, func() error {
			if len(out) == page.Limit() {
				next = encodeToken(last) // a row beyond the page: there is more
				return nil
			}
			last = runToken{App: k.App, User: k.User, Session: k.Session, Anchor: uint64(anchor), Nanos: nanos, RunID: id}
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

// ListUnfinishedRuns implements store.RunStore, from the partial index
// runs_unfinished.
func (s *Store) ListUnfinishedRuns(ctx context.Context) ([]*agentrunnerv1.Run, error) {
	var out []*agentrunnerv1.Run
	err := s.query(ctx, func() error {
		rows, err := s.pool.Query(ctx, `SELECT record FROM runs WHERE unfinished
			ORDER BY create_nanos, app_name, user_id, session_id, anchor, run_id`)
		if err != nil {
			return fmt.Errorf("list unfinished runs: %w", err)
		}
		var b []byte
		_, err = pgx.ForEachRow(rows, []any{&b}, func() error {
			rec, err := decodeRun(b)
			out = append(out, rec)
			return err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
