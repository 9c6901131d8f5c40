package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrunner/agentrunner/store"
)

// Batched writes. The pipelined writes of many sessions waiting at the
// same time go in one transaction, as boltstore groups its writers into
// one commit: two round trips (BEGIN with every write's row lock and
// reads, then every write's statements with COMMIT) and one WAL flush
// for the lot, in place of two round trips and a commit each. A batcher
// takes every write waiting, up to maxBatch and one a session (a second
// write of a session would not see the first's); at most maxBatchers
// batches are in flight, so that a write arriving while they commit
// waits for the next and the batches grow with the load.
//
// Locks are taken in one order by every batch, so that two cannot
// deadlock: the session rows in key order, then the ledger's user rows
// in key order, then its app rows (spendCompare), the order a single
// append also takes its two ledger rows in. A write that fails on its
// own (a missing session, a lease taken, a request_id held) fails alone
// and the others commit; when the transaction fails (a statement's
// error aborts all of it), each write is retried in a transaction of its
// own, so that a bad write fails only itself. No write is answered
// before its COMMIT's answer, and notifications follow the COMMIT.

const (
	// maxBatch bounds the writes of a batch: its statements go in one
	// round trip, and a batch that fails is retried write by write.
	maxBatch = 64
	// maxBatchers bounds the batches in flight: fewer connections busy,
	// bigger batches.
	maxBatchers = 4
	// batchTimeout bounds a batch, its writers' contexts aside.
	batchTimeout = 30 * time.Second
)

// batcher is the queue of writes waiting for a batch.
type batcher struct {
	mu      sync.Mutex
	pending []*pipeWrite
	running int // batchers in flight (drain)
}

// submit queues p for a batch and waits for its outcome. A batcher is
// started when fewer than maxBatchers run. A write that finds none
// waiting and a batcher's place free runs alone at once, in its own
// goroutine, holding that place.
func (s *Store) submit(ctx context.Context, p *pipeWrite) error {
	b := &s.batch
	b.mu.Lock()
	if len(b.pending) == 0 && b.running < maxBatchers {
		b.running++
		b.mu.Unlock()
		err := s.pipeAlone(ctx, p)
		s.handOff()
		return err
	}
	p.ctx, p.done = ctx, make(chan struct{})
	b.pending = append(b.pending, p)
	start := b.running < maxBatchers
	if start {
		b.running++
	}
	b.mu.Unlock()
	if start {
		go s.drain()
	}
	<-p.done
	return p.err
}

// handOff ends a lone write's turn in a batcher's place: a drain takes
// the place over when writes came meanwhile.
func (s *Store) handOff() {
	b := &s.batch
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) > 0 {
		go s.drain()
		return
	}
	b.running--
}

// finish sets p's outcome and wakes its writer.
func (p *pipeWrite) finish(err error) {
	p.err = err
	close(p.done)
}

// drain commits batches until no write waits.
func (s *Store) drain() {
	for {
		batch := s.batch.take()
		if batch == nil {
			return
		}
		s.commitBatch(batch)
	}
}

// take returns the next batch: the writes waiting,
// at most maxBatch and one a session, oldest first; nil when none wait,
// and then the caller's drain ends.
func (b *batcher) take() []*pipeWrite {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) == 0 {
		b.running--
		return nil
	}
	var out []*pipeWrite
	seen := make(map[store.SessionKey]bool, min(len(b.pending), maxBatch))
	rest := b.pending[:0]
	for _, p := range b.pending {
		if len(out) < maxBatch && !seen[p.k] {
			seen[p.k] = true
			out = append(out, p)
		} else {
			rest = append(rest, p)
		}
	}
	clear(b.pending[len(rest):])
	b.pending = rest
	return out
}

// compareKeys orders session keys as the sessions table's primary key.
func compareKeys(a, b store.SessionKey) int {
	return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.User, b.User), cmp.Compare(a.Session, b.Session))
}

// commitBatch runs batch, in session key order, and finishes each of its
// writes: a write alone as its own transaction, a failed batch's writes
// each alone, at once.
func (s *Store) commitBatch(batch []*pipeWrite) {
	live := batch[:0]
	for _, p := range batch {
		if err := s.check(p.ctx); err != nil {
			p.finish(err)
			continue
		}
		live = append(live, p)
	}
	slices.SortFunc(live, func(x, y *pipeWrite) int { return compareKeys(x.k, y.k) })
	switch len(live) {
	case 0:
		return
	case 1:
		live[0].finish(s.pipeAlone(live[0].ctx, live[0]))
		return
	}
	errs, err := s.tryBatch(live)
	if err != nil {
		s.opts.Logger.Debug("batch rolled back: its writes retried alone", "writes", len(live), "err", err)
		var wg sync.WaitGroup
		for _, p := range live {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.finish(s.pipeAlone(p.ctx, p))
			}()
		}
		wg.Wait()
		return
	}
	for i, p := range live {
		p.finish(errs[i])
	}
}

// tryBatch runs the writes of live, in key order, in one transaction. It
// returns each write's own error (nil: committed, or nothing to write),
// or an error when the transaction did not commit.
func (s *Store) tryBatch(live []*pipeWrite) ([]error, error) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire a connection: %w", err)
	}
	defer conn.Release()
	committed := false
	defer func() {
		if !committed {
			rollback(ctx, conn)
		}
	}()
	start := time.Now()
	reads, errs, err := batchReads(ctx, conn, live)
	if err != nil {
		return nil, err
	}
	b := &pgx.Batch{}
	var rows batchRows
	var spends []spendRow
	var notes []note
	writes := 0
	for i, p := range live {
		if errs[i] != nil {
			continue
		}
		p.reset()
		spend, write, err := s.planWrites(p.ctx, p, reads[i], b, &rows)
		if err != nil {
			errs[i] = s.mapErr(err)
			continue
		}
		if write {
			writes++
			notes = append(notes, p.notes...)
		}
		if spend != nil {
			spends = append(spends, spendRowOf(spend))
		}
	}
	// The events and session records first, in the order a single
	// write sends them: before the ledger and run rows.
	b.QueuedQueries = append(rows.queue(), b.QueuedQueries...)
	queueSpends(b, spends)
	b.Queue("COMMIT")
	queueNotes(b, notes)
	if err := sendWrites(ctx, conn, b, len(notes)); err != nil {
		return nil, err
	}
	committed = true
	s.committed(start, writes)
	return errs, nil
}

// batchReads sends BEGIN and the reads of every write of live in one
// round trip. A write whose session is missing gets ErrNotFound in its
// place of errs; any other failure is the batch's.
func batchReads(ctx context.Context, conn interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}, live []*pipeWrite) ([]*pipeReads, []error, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	calls := make([]bool, len(live))
	for i, p := range live {
		calls[i] = p.queueReads(b)
	}
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, nil, fmt.Errorf("begin: %w", err)
	}
	reads := make([]*pipeReads, len(live))
	errs := make([]error, len(live))
	for i, p := range live {
		r, err := p.scanReads(br, calls[i])
		switch {
		case err == nil:
			reads[i] = r
		case errors.Is(err, store.ErrNotFound):
			errs[i] = err
		default:
			return nil, nil, err
		}
	}
	if err := br.Close(); err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	return reads, errs, nil
}

// spendRow is one row's part of a batch's sqlAddSpendRow: the counts of
// sqlAddSpend's $5 to $13, in order, and calls.
type spendRow struct {
	app, user, model, currency string
	day                        time.Time
	shard                      int16
	counts                     [9]int64
	calls                      int64
}

// spendRowOf is the user's row of the arguments of sqlAddSpend
// (spendArgs).
func spendRowOf(args []any) spendRow {
	r := spendRow{
		app: args[0].(string), user: args[1].(string), day: args[2].(time.Time), model: args[3].(string),
		currency: args[13].(string), shard: args[14].(int16), calls: 1,
	}
	for i := range r.counts {
		r.counts[i] = args[4+i].(int64)
	}
	return r
}

// spendCompare orders the ledger's rows as every batch locks them.
func spendCompare(a, b spendRow) int {
	return cmp.Or(cmp.Compare(a.app, b.app), cmp.Compare(a.user, b.user), a.day.Compare(b.day),
		cmp.Compare(a.model, b.model), cmp.Compare(a.shard, b.shard))
}

// queueSpends queues the ledger rows of a batch's spends: the user rows
// in key order, then the app rows (user "") in key order, rows of one
// key summed (a statement may not change a row twice, and one statement
// a row is fewer).
func queueSpends(b *pgx.Batch, spends []spendRow) {
	if len(spends) == 0 {
		return
	}
	apps := make([]spendRow, len(spends))
	for i, r := range spends {
		r.user = allUsers
		apps[i] = r
	}
	for _, rows := range [][]spendRow{spends, apps} {
		for _, r := range sumSpends(rows) {
			b.Queue(sqlAddSpendRow, r.app, r.user, r.day, r.model,
				r.counts[0], r.counts[1], r.counts[2], r.counts[3], r.counts[4], r.counts[5], r.counts[6], r.counts[7], r.counts[8],
				r.currency, r.shard, r.calls)
		}
	}
}

// sumSpends sorts rows in spendCompare order and sums those of one key.
func sumSpends(rows []spendRow) []spendRow {
	slices.SortStableFunc(rows, spendCompare)
	out := rows[:0]
	for _, r := range rows {
		if n := len(out); n > 0 && spendCompare(out[n-1], r) == 0 {
			last := &out[n-1]
			for i := range last.counts {
				last.counts[i] += r.counts[i]
			}
			last.calls += r.calls
			if last.currency == "" {
				last.currency = r.currency
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

const (
	// sqlInsertEvents inserts a batch's events, one row per element.
	sqlInsertEvents = `INSERT INTO events (app_name, user_id, session_id, sequence, event_id, event_time, record)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::timestamptz[], $7::bytea[])`
	// sqlUpdateSessions writes a batch's session records, each row
	// already locked; COLLATE "C" as the key columns are.
	sqlUpdateSessions = `UPDATE sessions AS s SET record = u.record, last_sequence = u.last
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::bigint[]) AS u(app, usr, sess, record, last)
		WHERE s.app_name = u.app COLLATE "C" AND s.user_id = u.usr COLLATE "C" AND s.session_id = u.sess COLLATE "C"`
)

// eventRow is an appended event's row and its session's new record.
type eventRow struct {
	k       store.SessionKey
	seq     int64
	id      string
	at      time.Time
	record  []byte
	session []byte
}

// batchRows are the event rows of a batch, as the arrays of
// sqlInsertEvents and sqlUpdateSessions: two statements for the batch in
// place of two a write.
type batchRows struct {
	apps, users, sessions, ids []string
	seqs                       []int64
	ats                        []time.Time
	records, sessRecords       [][]byte
}

func (r *batchRows) add(e eventRow) {
	r.apps = append(r.apps, e.k.App)
	r.users = append(r.users, e.k.User)
	r.sessions = append(r.sessions, e.k.Session)
	r.ids = append(r.ids, e.id)
	r.seqs = append(r.seqs, e.seq)
	r.ats = append(r.ats, e.at)
	r.records = append(r.records, e.record)
	r.sessRecords = append(r.sessRecords, e.session)
}

// queue returns the two statements of r; none when r is empty.
func (r *batchRows) queue() []*pgx.QueuedQuery {
	if len(r.apps) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	b.Queue(sqlInsertEvents, r.apps, r.users, r.sessions, r.seqs, r.ids, r.ats, r.records)
	b.Queue(sqlUpdateSessions, r.apps, r.users, r.sessions, r.sessRecords, r.seqs)
	return b.QueuedQueries
}
