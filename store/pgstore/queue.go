package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// The run queue (migration 0004): runs that wait for their session, kept
// in the database so that the replica that frees the session, whichever
// it is, runs the next one. Every transaction here locks the session's
// row first, then queue rows, as DeleteSession (whose cascade reaches the
// queue) does: no two of them wait on each other in opposite order.

var _ store.RunQueue = (*Store)(nil)

const (
	sqlQueueLast = `INSERT INTO run_queue (run_id, app_name, user_id, session_id, position)
		VALUES ($1, $2, $3, $4, nextval('run_queue_position')) ON CONFLICT (run_id) DO NOTHING`
	// A run that goes first takes one less than the session's first
	// position; the session's row lock keeps two such runs apart.
	sqlQueueFirst = `INSERT INTO run_queue (run_id, app_name, user_id, session_id, position)
		VALUES ($1, $2, $3, $4, coalesce((SELECT min(position) FROM run_queue
			WHERE app_name = $2 AND user_id = $3 AND session_id = $4), nextval('run_queue_position')) - 1)
		ON CONFLICT (run_id) DO NOTHING`
	// sqlQueueHead takes the first queued run of a session that no other
	// transaction holds (one that CancelQueuedRun is removing is passed
	// over).
	sqlQueueHead = `SELECT q.run_id, r.record FROM run_queue q JOIN runs r USING (run_id)
		WHERE q.app_name = $1 AND q.user_id = $2 AND q.session_id = $3
		ORDER BY q.position, q.run_id LIMIT 1 FOR UPDATE OF q SKIP LOCKED`
	sqlSessionLease = `SELECT lease_holder, lease_token, coalesce(lease_expires > clock_timestamp(), false)
		FROM sessions WHERE app_name = $1 AND user_id = $2 AND session_id = $3 FOR UPDATE`
)

// EnqueueRun implements store.RunQueue.
func (s *Store) EnqueueRun(ctx context.Context, run *agentrunnerv1.Run, front bool) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if run.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_PENDING {
		return fmt.Errorf("enqueue run %s: status %s is not pending: %w", run.GetRunId(), run.GetStatus(), store.ErrInvalidArgument)
	}
	w, err := prepareRun(run)
	if err != nil {
		return err
	}
	k := w.k
	return s.inTx(ctx, func(tx pgx.Tx) error {
		sess, err := lockSession(ctx, tx, k)
		if err != nil {
			return err
		}
		var b []byte
		err = tx.QueryRow(ctx, "SELECT record FROM runs WHERE run_id = $1", run.GetRunId()).Scan(&b)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return fmt.Errorf("read run %s: %w", run.GetRunId(), err)
		default:
			cur, err := decodeRun(b)
			if err != nil {
				return err
			}
			if cur.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_PENDING {
				return fmt.Errorf("enqueue run %s: it is %s: %w", run.GetRunId(), cur.GetStatus(), store.ErrAlreadyExists)
			}
		}
		if _, err := putRunTx(ctx, tx, w, sess.GetLastSequence(), 0); err != nil {
			return err
		}
		q := sqlQueueLast
		if front {
			q = sqlQueueFirst
		}
		if _, err := tx.Exec(ctx, q, run.GetRunId(), k.App, k.User, k.Session); err != nil {
			return fmt.Errorf("queue run %s: %w", run.GetRunId(), err)
		}
		return notifyTx(ctx, tx, chanQueue, queuedPayload(k, run.GetRunId()))
	})
}

// ClaimQueuedRun implements store.RunQueue. It is on the path of every
// run's end (the hand-off), so it is pipelined as appends are
// (pipeline.go): BEGIN with its two reads, then its writes with COMMIT,
// two round trips.
func (s *Store) ClaimQueuedRun(ctx context.Context, k store.SessionKey, prev store.Lease, holder func(runID string) string, ttl time.Duration) (*agentrunnerv1.Run, store.Lease, error) {
	if err := validateLease(k, "queue", ttl); err != nil {
		return nil, store.Lease{}, err
	}
	if err := s.check(ctx); err != nil {
		return nil, store.Lease{}, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, store.Lease{}, s.mapErr(fmt.Errorf("acquire a connection: %w", err))
	}
	defer conn.Release()
	committed := false
	defer func() {
		if !committed {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_, _ = conn.Exec(rctx, "ROLLBACK")
		}
	}()
	start := time.Now()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(sqlSessionLease, k.App, k.User, k.Session)
	b.Queue(sqlQueueHead, k.App, k.User, k.Session)
	br := conn.SendBatch(ctx, b)
	c, err := scanClaim(br, k, prev)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("read the queue of %s: %w", k, cerr)
	}
	if err != nil {
		return nil, store.Lease{}, s.mapErr(err)
	}
	if c.rec == nil && !c.mine {
		return nil, store.Lease{}, fmt.Errorf("queue of session %s: %w", k, store.ErrNotFound)
	}
	l, err := c.write(ctx, conn, k, holder, ttl)
	if err != nil {
		return nil, store.Lease{}, s.mapErr(err)
	}
	committed = true
	s.committed(start, 1)
	if c.rec == nil {
		return nil, store.Lease{}, fmt.Errorf("queue of session %s: %w", k, store.ErrNotFound)
	}
	return c.rec, l, nil
}

// claim is what ClaimQueuedRun read: whether the session's lease is the
// caller's prev, and the run it takes, if any.
type claim struct {
	mine bool
	id   string
	rec  *agentrunnerv1.Run
}

// scanClaim reads the results of ClaimQueuedRun's first round trip.
// Another holder's live lease is ErrAlreadyExists.
func scanClaim(br pgx.BatchResults, k store.SessionKey, prev store.Lease) (claim, error) {
	var c claim
	if _, err := br.Exec(); err != nil {
		return c, fmt.Errorf("begin: %w", err)
	}
	var (
		cur   *string
		token int64
		live  bool
	)
	err := br.QueryRow().Scan(&cur, &token, &live)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("session %s: %w", k, store.ErrNotFound)
	} else if err != nil {
		return c, fmt.Errorf("read lease of %s: %w", k, err)
	}
	c.mine = prev.Holder != "" && cur != nil && *cur == prev.Holder && uint64(token) == prev.Token
	if live && !c.mine {
		return c, fmt.Errorf("session %s is leased to %s: %w", k, *cur, store.ErrAlreadyExists)
	}
	var b []byte
	err = br.QueryRow().Scan(&c.id, &b)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return c, nil
	case err != nil:
		return c, fmt.Errorf("read the queue of %s: %w", k, err)
	}
	c.rec, err = decodeRun(b)
	return c, err
}

// write sends ClaimQueuedRun's writes with COMMIT: the run taken out of
// the queue and the session's lease given to it with a new token, or
// (nothing queued) the caller's lease released.
func (c claim) write(ctx context.Context, conn *pgxpool.Conn, k store.SessionKey, holder func(runID string) string, ttl time.Duration) (store.Lease, error) {
	l := store.Lease{Key: k}
	b := &pgx.Batch{}
	if c.rec != nil {
		l.Holder = holder(c.id)
		if err := checkText(l.Holder); err != nil {
			return l, err
		}
		b.Queue("DELETE FROM run_queue WHERE run_id = $1", c.id)
		b.Queue(`UPDATE sessions SET lease_holder = $4, lease_token = lease_token + 1,
			lease_expires = clock_timestamp() + $5 * interval '1 microsecond'
			WHERE app_name = $1 AND user_id = $2 AND session_id = $3 RETURNING lease_token, lease_expires`,
			k.App, k.User, k.Session, l.Holder, ttl.Microseconds())
	} else {
		// A lease given up and nothing handed over: no WAL flush to wait
		// for at every run's end. Lost in a crash of the database, the
		// lease expires as a dead replica's does.
		b.Queue("SET LOCAL synchronous_commit TO OFF")
		b.Queue(`UPDATE sessions SET lease_holder = NULL, lease_expires = NULL
			WHERE app_name = $1 AND user_id = $2 AND session_id = $3`, k.App, k.User, k.Session)
	}
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	err := scanClaimWrites(br, c.rec != nil, &l)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("take the queue of %s: %w", k, err)
	}
	return l, nil
}

// scanClaimWrites reads the results of claim.write's batch.
func scanClaimWrites(br pgx.BatchResults, took bool, l *store.Lease) error {
	if took {
		if _, err := br.Exec(); err != nil {
			return err
		}
		var token int64
		if err := br.QueryRow().Scan(&token, &l.Expires); err != nil {
			return err
		}
		l.Token = uint64(token)
	} else {
		for range 2 { // SET LOCAL, UPDATE
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
	}
	tag, err := br.Exec()
	if err == nil && tag.String() != "COMMIT" {
		err = fmt.Errorf("transaction ended with %s", tag)
	}
	return err
}

// CancelQueuedRun implements store.RunQueue.
func (s *Store) CancelQueuedRun(ctx context.Context, runID string, end func(*agentrunnerv1.Run) *agentrunnerv1.Run) (*agentrunnerv1.Run, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := checkParts(runID); err != nil {
		return nil, err
	}
	var k store.SessionKey
	err := s.pool.QueryRow(ctx, "SELECT app_name, user_id, session_id FROM run_queue WHERE run_id = $1", runID).Scan(&k.App, &k.User, &k.Session)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("run %s is not queued: %w", runID, store.ErrNotFound)
	} else if err != nil {
		return nil, s.mapErr(fmt.Errorf("read the queue: %w", err))
	}
	var out *agentrunnerv1.Run
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		sess, err := lockSession(ctx, tx, k)
		if err != nil {
			return err
		}
		var b []byte
		err = tx.QueryRow(ctx, `SELECT r.record FROM run_queue q JOIN runs r USING (run_id)
			WHERE q.run_id = $1 FOR UPDATE OF q`, runID).Scan(&b)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s is not queued: %w", runID, store.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("read run %s: %w", runID, err)
		}
		rec, err := decodeRun(b)
		if err != nil {
			return err
		}
		w, err := prepareRun(end(rec))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM run_queue WHERE run_id = $1", runID); err != nil {
			return fmt.Errorf("dequeue run %s: %w", runID, err)
		}
		if out, err = putRunTx(ctx, tx, w, sess.GetLastSequence(), 0); err != nil {
			return err
		}
		return notifyTx(ctx, tx, chanRun, runPayload(runID, 0))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// QueuedSessions implements store.RunQueue.
func (s *Store) QueuedSessions(ctx context.Context, app string) ([]store.SessionKey, error) {
	var out []store.SessionKey
	err := s.query(ctx, func() error {
		rows, err := s.pool.Query(ctx, `SELECT DISTINCT user_id, session_id FROM run_queue WHERE app_name = $1 ORDER BY 1, 2`, app)
		if err != nil {
			return fmt.Errorf("list queued sessions: %w", err)
		}
		var user, session string
		_, err = pgx.ForEachRow(rows, []any{&user, &session}, func() error {
			out = append(out, store.SessionKey{App: app, User: user, Session: session})
			return nil
		})
		return err
	})
	return out, err
}

// HasQueuedRuns implements store.RunQueue.
func (s *Store) HasQueuedRuns(ctx context.Context, k store.SessionKey) (bool, error) {
	if err := validateKey(k); err != nil {
		return false, err
	}
	var has bool
	err := s.query(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM run_queue WHERE app_name = $1 AND user_id = $2 AND session_id = $3)`,
			k.App, k.User, k.Session).Scan(&has)
	})
	return has, err
}

// SessionLease implements store.RunQueue.
func (s *Store) SessionLease(ctx context.Context, k store.SessionKey) (store.Lease, error) {
	if err := validateKey(k); err != nil {
		return store.Lease{}, err
	}
	l := store.Lease{Key: k}
	err := s.query(ctx, func() error {
		var token int64
		err := s.pool.QueryRow(ctx, `SELECT lease_holder, lease_token, lease_expires FROM sessions
			WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND lease_expires > clock_timestamp()`,
			k.App, k.User, k.Session).Scan(&l.Holder, &token, &l.Expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("session %s has no live lease: %w", k, store.ErrNotFound)
		}
		l.Token = uint64(token)
		return err
	})
	return l, err
}

// RunningRuns implements store.RunQueue, from the partial index of the
// app's active runs (runs_active_by_app): one read, no lock, however many
// runs have ended.
func (s *Store) RunningRuns(ctx context.Context, app string) ([]store.RunningRun, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	var out []store.RunningRun
	err := s.query(ctx, func() error {
		out = out[:0]
		rows, err := s.pool.Query(ctx, `SELECT r.record, s.lease_holder, s.lease_token,
				coalesce(greatest((extract(epoch FROM s.lease_expires - clock_timestamp()) * 1e6)::bigint, 0), 0)
			FROM runs r JOIN sessions s USING (app_name, user_id, session_id)
			WHERE r.app_name = $1 AND r.status = $2 ORDER BY r.create_nanos, r.run_id`,
			app, int32(agentrunnerv1.RunStatus_RUN_STATUS_RUNNING))
		if err != nil {
			return fmt.Errorf("list running runs: %w", err)
		}
		var (
			b      []byte
			holder *string
			token  int64
			left   int64
		)
		_, err = pgx.ForEachRow(rows, []any{&b, &holder, &token, &left}, func() error {
			rec, err := decodeRun(b)
			if err != nil {
				return err
			}
			rr := store.RunningRun{Run: rec, Lease: store.Lease{Key: store.RunKey(rec)}}
			if holder != nil && left > 0 {
				rr.Lease.Holder, rr.Lease.Token, rr.Left = *holder, uint64(token), time.Duration(left)*time.Microsecond
			}
			out = append(out, rr)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
