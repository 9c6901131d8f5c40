package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Pipelined writes. An append, a run record, or both, is one transaction
// sent in two round trips: BEGIN with every read the write needs (the
// session's row lock first, so that the reads see what the lock
// protects), then, once the write is worked out here, its statements
// with COMMIT. A transaction of single statements would take five or
// more round trips, each a wake-up of the server's backend. Writes of
// sessions waiting at the same time share one such transaction
// (batch.go); a write with no company goes alone. Appends
// that change shared ("app:", "user:") state take the transaction path
// (appendTx), whose read-modify-write of a shared row may have to insert
// it first.

const (
	sqlLockSession = `SELECT record, lease_token, last_sequence FROM sessions
		WHERE app_name = $1 AND user_id = $2 AND session_id = $3 FOR UPDATE`
	sqlFindEventID = `SELECT record FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND event_id = $4
		ORDER BY sequence LIMIT 1`
	sqlInsertEvent = `INSERT INTO events (app_name, user_id, session_id, sequence, event_id, event_time, record)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
	sqlUpdateSession = "UPDATE sessions SET record = $4, last_sequence = $5 WHERE app_name = $1 AND user_id = $2 AND session_id = $3"
)

// pipeWrite is one pipelined write and, once done, its outcome.
type pipeWrite struct {
	k      store.SessionKey
	ev     *eventWrite // the event to append; nil for a run record alone
	onceID string      // AppendEventOnce: append only if no event has this id
	run    *runWrite   // the run record to write, if any
	lazy   bool        // commit without waiting for the WAL flush (PutRunLater)

	stored    *agentrunnerv1.Event // the appended event
	storedRun *agentrunnerv1.Run   // the run record as written
	found     []byte               // AppendEventOnce: the event holding onceID
	notes     []note               // notifications to send once committed

	// In a batch (batch.go): the writer's context, its outcome, and
	// done, closed once the outcome is set.
	ctx  context.Context
	err  error
	done chan struct{}
}

// pipeReads is what the first round trip read.
type pipeReads struct {
	sess  *agentrunnerv1.Session
	token int64  // the session's lease token
	last  uint64 // the session's last sequence
	found []byte
	known map[string]*agentrunnerv1.ToolCall
	run   storedRun
}

// pipelined runs p: in a batch with the writes of other sessions
// waiting at the same time (batch.go), or alone when it is lazy, whose
// commit skips the WAL flush the others wait for.
func (s *Store) pipelined(ctx context.Context, p *pipeWrite) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if p.lazy {
		return s.pipeAlone(ctx, p)
	}
	return s.submit(ctx, p)
}

// pipeAlone runs p in a transaction of its own. A connection left inside
// the transaction by a failure is rolled back, or closed by Release when
// that fails too.
func (s *Store) pipeAlone(ctx context.Context, p *pipeWrite) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	p.reset()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.mapErr(fmt.Errorf("acquire a connection: %w", err))
	}
	defer conn.Release()
	committed := false
	defer func() {
		if !committed {
			rollback(ctx, conn)
		}
	}()
	start := time.Now()
	r, err := p.read(ctx, conn)
	if err != nil {
		return s.mapErr(err)
	}
	b := &pgx.Batch{}
	spend, write, err := s.planWrites(ctx, p, r, b, nil)
	if err != nil || !write {
		return s.mapErr(err) // nothing to write: a retried event
	}
	if spend != nil {
		b.Queue(sqlAddSpend, spend...)
	}
	b.Queue("COMMIT")
	queueNotes(b, p.notes)
	if err := sendWrites(ctx, conn, b, len(p.notes)); err != nil {
		return s.mapErr(err)
	}
	committed = true
	s.committed(start, 1)
	return nil
}

// rollback ends the transaction a failed write left open on conn.
func rollback(ctx context.Context, conn *pgxpool.Conn) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, _ = conn.Exec(rctx, "ROLLBACK")
}

// reset forgets the outcome of an earlier try of p (a batch that rolled
// back).
func (p *pipeWrite) reset() {
	p.stored, p.storedRun, p.found, p.notes = nil, nil, nil, nil
}

// read sends BEGIN and p's reads in one round trip.
func (p *pipeWrite) read(ctx context.Context, conn *pgxpool.Conn) (*pipeReads, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	if p.lazy {
		b.Queue("SET LOCAL synchronous_commit TO OFF")
	}
	calls := p.queueReads(b)
	br := conn.SendBatch(ctx, b)
	_, err := br.Exec()
	if err != nil {
		err = fmt.Errorf("begin: %w", err)
	} else if p.lazy {
		if _, err = br.Exec(); err != nil {
			err = fmt.Errorf("set synchronous_commit: %w", err)
		}
	}
	var r *pipeReads
	if err == nil {
		r, err = p.scanReads(br, calls)
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("read: %w", cerr)
	}
	return r, err
}

// queueReads queues p's reads, the session's row lock first, and
// reports whether they include the tool calls' ledger.
func (p *pipeWrite) queueReads(b *pgx.Batch) bool {
	k := p.k
	b.Queue(sqlLockSession, k.App, k.User, k.Session)
	if p.onceID != "" {
		b.Queue(sqlFindEventID, k.App, k.User, k.Session, p.onceID)
	}
	var ids []string
	if p.ev != nil {
		ids = callIDs(p.ev.stored)
	}
	if len(ids) > 0 {
		b.Queue(sqlKnownCalls, k.App, k.User, k.Session, ids)
	}
	if p.run != nil {
		b.Queue(sqlRunOf, p.run.rec.GetRunId())
		if req := p.run.rec.GetRequestId(); req != "" {
			b.Queue(sqlRequestHolder, k.App, k.User, k.Session, req, p.run.rec.GetRunId())
		}
	}
	return len(ids) > 0
}

// scanReads reads the results of queueReads, in its order. A missing
// session is ErrNotFound once all of p's results are read, so that a
// batch's next write reads its own.
func (p *pipeWrite) scanReads(br pgx.BatchResults, calls bool) (*pipeReads, error) {
	var r pipeReads
	var rec []byte
	var last int64
	err := br.QueryRow().Scan(&rec, &r.token, &last)
	missing := errors.Is(err, pgx.ErrNoRows)
	if err != nil && !missing {
		return nil, fmt.Errorf("lock session %s: %w", p.k, err)
	}
	if p.onceID != "" {
		if err := br.QueryRow().Scan(&r.found); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("look for event id: %w", err)
		}
	}
	if calls {
		rows, err := br.Query()
		if err == nil {
			r.known, err = scanKnownCalls(rows)
		}
		if err != nil {
			return nil, fmt.Errorf("read tool calls: %w", err)
		}
	}
	if p.run != nil {
		if err := r.run.scan(br.QueryRow()); err != nil {
			return nil, fmt.Errorf("read run %s: %w", p.run.rec.GetRunId(), err)
		}
		if p.run.rec.GetRequestId() != "" {
			if err := r.run.scanHolder(br.QueryRow()); err != nil {
				return nil, fmt.Errorf("read request_id: %w", err)
			}
		}
	}
	if missing {
		return nil, fmt.Errorf("session %s: %w", p.k, store.ErrNotFound)
	}
	r.last = uint64(last)
	if r.sess, err = decodeSession(rec); err != nil {
		return nil, err
	}
	return &r, nil
}

// planWrites queues p's statements, worked out from what was read, on
// b, all or none, and sets p.notes. It returns the arguments of p's
// sqlAddSpend, left for the caller to queue last before the COMMIT (the
// ledger's rows are shared by the user's and the app's appends, and stay
// locked until it), and false when there is nothing to write (the event
// of onceID was found).
//
// With rows, a batch's (batch.go), the event's row and the session's
// update go there, to be written with the batch's others in one
// statement each; without, they are queued on out.
func (s *Store) planWrites(ctx context.Context, p *pipeWrite, r *pipeReads, out *pgx.Batch, rows *batchRows) (spend []any, write bool, err error) {
	k := p.k
	b := &pgx.Batch{}
	var ev eventRow
	var seq uint64
	if p.ev != nil {
		if err := checkFence(ctx, k, r.token); err != nil {
			return nil, false, err
		}
		if r.found != nil {
			p.found = r.found
			return nil, false, nil
		}
		seq = r.sess.GetLastSequence() + 1
		recBytes, err := s.nextSession(r.sess, seq, *p.ev)
		if err != nil {
			return nil, false, fmt.Errorf("session %s: %w", k, err)
		}
		stored := p.ev.stored.CloneVT()
		stored.Sequence = seq
		evBytes, err := proto.Marshal(stored)
		if err != nil {
			return nil, false, fmt.Errorf("marshal event: %w", err)
		}
		ev = eventRow{k: k, seq: int64(seq), id: stored.GetId(), at: stored.GetTimestamp().AsTime(), record: evBytes, session: recBytes}
		if rows == nil {
			b.Queue(sqlInsertEvent, k.App, k.User, k.Session, ev.seq, ev.id, ev.at, evBytes)
		}
		if args, ok := indexArgs(k, seq, stored); ok {
			b.Queue(sqlIndexEvent, args...)
		}
		puts, err := ledgerChanges(k, r.known, seq, stored)
		if err != nil {
			return nil, false, err
		}
		for _, args := range puts {
			b.Queue(sqlPutCall, args...)
		}
		if rows == nil {
			b.Queue(sqlUpdateSession, k.App, k.User, k.Session, recBytes, int64(seq))
		}
		p.stored = stored
	}
	if p.run != nil {
		plan, err := p.run.plan(r.run, r.last, seq)
		if err != nil {
			return nil, false, err
		}
		plan.queue(b)
		p.storedRun = plan.rec
	}
	if p.ev != nil && p.ev.counted {
		spend = spendArgs(k, p.stored, p.ev.day)
	}
	// The notifications go after the COMMIT, in the same round trip, each
	// in a transaction of its own that writes no WAL: inside the write's
	// transaction, PostgreSQL would serialize its commit with every other
	// notifying one through the WAL flush (it holds an exclusive lock from
	// queueing the notification to the end of the commit), undoing the
	// group commit that concurrent sessions' appends share.
	p.notes = p.notices(seq)
	out.QueuedQueries = append(out.QueuedQueries, b.QueuedQueries...)
	if rows != nil && p.ev != nil {
		rows.add(ev)
	}
	return spend, true, nil
}

// queueNotes queues notes, sent after a COMMIT.
func queueNotes(b *pgx.Batch, notes []note) {
	for _, n := range notes {
		b.Queue(sqlNotify, n.channel, n.payload)
	}
}

// sendWrites sends the writes, COMMIT and the after statements that
// follow it (notifications) in one round trip and checks that the
// transaction committed. A failed after statement leaves the write
// stored: it is not the write's error.
func sendWrites(ctx context.Context, conn *pgxpool.Conn, b *pgx.Batch, after int) error {
	br := conn.SendBatch(ctx, b)
	commit := b.Len() - 1 - after
	var err error
	for i := 0; i <= commit && err == nil; i++ {
		var tag interface{ String() string }
		tag, err = br.Exec()
		if err == nil && i == commit && tag.String() != "COMMIT" {
			err = fmt.Errorf("transaction ended with %s", tag)
		}
	}
	for i := commit + 1; i < b.Len() && err == nil; i++ {
		if _, nerr := br.Exec(); nerr != nil {
			break // the rest fail alike
		}
	}
	if cerr := br.Close(); err == nil && cerr != nil && after == 0 {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// notices returns the notifications of p's write, sent once it has
// committed: the run of its event, and the run of its record.
func (p *pipeWrite) notices(seq uint64) []note {
	var notes []note
	var evRun string
	if p.stored != nil {
		evRun = p.stored.GetInvocationId()
		if n := runPayload(evRun, seq); n != "" {
			notes = append(notes, note{chanRun, n})
		}
	}
	if p.run != nil && p.run.rec.GetRunId() != evRun {
		if n := runPayload(p.run.rec.GetRunId(), seq); n != "" {
			notes = append(notes, note{chanRun, n})
		}
	}
	return notes
}
