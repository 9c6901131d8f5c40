package pgstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Memory (migration 0003): memory_sessions lists the sessions in memory,
// memory_postings holds a row per term of each of their events with
// text. Unlike the bbolt store, whose appends leave indexing to a
// background merger, an append here writes its event's postings in its
// own transaction, in the statement batch it sends anyway (sqlIndexEvent
// inserts nothing for a session not in memory): PostgreSQL's writes of a
// few index rows cost little beside the commit's WAL flush, and a search
// then reads postings alone.
//
// A search reads the user's newest postings of its terms (at most
// MaxPostingsPerTerm a term) through memory_postings_by_term and ranks
// them here, as the bbolt store does:
// each matching term adds (1 + ln tf) * ln(1 + N/df), N the user's
// indexed events, df the events holding the term; ties go to the newer
// event, then session and sequence, so that a page token is a place in
// a total order.

// MaxPostingsPerTerm bounds the postings a search reads for one term, as
// boltstore.MaxPostingsPerTerm does: a term in more of the user's events
// than this ranks only the newest of them, and weighs as if it were in
// this many. It bounds a search's work however long the user's history.
const MaxPostingsPerTerm = 2000

const (
	// sqlIndexEvent writes the postings of event $4 of session $1/$2/$3
	// when the session is in memory, and counts it there: $6 and $7 are
	// its terms and their counts, $5 its time in Unix nanoseconds.
	sqlIndexEvent = `WITH m AS (
			UPDATE memory_sessions SET indexed = indexed + 1
			WHERE app_name = $1 AND user_id = $2 AND session_id = $3 RETURNING 1)
		INSERT INTO memory_postings (app_name, user_id, session_id, sequence, term, tf, event_nanos)
		SELECT $1, $2, $3, $4, t.term, t.tf, $5 FROM m, unnest($6::text[], $7::integer[]) AS t(term, tf)`
	// sqlMemoryPostings reads the newest $5 postings of each term of $3,
	// each term a scan of memory_postings_by_term.
	sqlMemoryPostings = `SELECT t.term, p.session_id, p.sequence, p.tf, p.event_nanos
		FROM unnest($3::text[]) AS t(term) CROSS JOIN LATERAL (
			SELECT session_id, sequence, tf, event_nanos FROM memory_postings
			WHERE app_name = $1 AND user_id = $2 AND term = t.term AND session_id <> $4
			ORDER BY event_nanos DESC, session_id, sequence LIMIT $5) p`
	sqlMemoryTotal = `SELECT coalesce(sum(indexed), 0)::bigint FROM memory_sessions WHERE app_name = $1 AND user_id = $2`
	sqlMemoryEvent = `SELECT record FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND sequence = $4`
)

// eventTerms returns the memory terms of ev as the arrays sqlIndexEvent
// takes; nil when ev has no text to index.
func eventTerms(ev *agentrunnerv1.Event) ([]string, []int32) {
	terms := store.MemoryTerms(store.MemoryText(ev))
	if len(terms) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(terms))
	for t := range terms {
		names = append(names, t)
	}
	slices.Sort(names)
	counts := make([]int32, len(names))
	for i, t := range names {
		counts[i] = int32(min(terms[t], math.MaxInt32))
	}
	return names, counts
}

// indexArgs returns sqlIndexEvent's arguments for event seq of k, and
// false when the event has no terms (nothing to queue).
func indexArgs(k store.SessionKey, seq uint64, ev *agentrunnerv1.Event) ([]any, bool) {
	names, counts := eventTerms(ev)
	if names == nil {
		return nil, false
	}
	return []any{k.App, k.User, k.Session, int64(seq), store.MemoryTime(ev).UnixNano(), names, counts}, true
}

// IndexSession adds session k to memory: its events so far get their
// postings in this transaction, and every event appended later in its
// append's. Adding a session already in memory only reads, so a caller
// may add a session after every event. Returns ErrNotFound for a
// missing session.
func (s *Store) IndexSession(ctx context.Context, k store.SessionKey) error {
	if err := validateKey(k); err != nil {
		return err
	}
	var in bool
	err := s.query(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM memory_sessions
			WHERE app_name = $1 AND user_id = $2 AND session_id = $3)`, k.App, k.User, k.Session).Scan(&in)
	})
	if err != nil || in {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		// The session's row lock orders this against its appends: an
		// append either committed before (its event is read below) or
		// waits and then finds the session in memory.
		if _, err := lockSession(ctx, tx, k); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO memory_sessions (app_name, user_id, session_id)
			VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, k.App, k.User, k.Session)
		if err != nil {
			return fmt.Errorf("add session to memory: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil // added by a concurrent call
		}
		return indexEvents(ctx, tx, k)
	})
}

// indexEvents writes the postings of every event of session k, which is
// in memory and locked by tx, one batch of statements.
func indexEvents(ctx context.Context, tx pgx.Tx, k store.SessionKey) error {
	rows, err := tx.Query(ctx, `SELECT sequence, record FROM events
		WHERE app_name = $1 AND user_id = $2 AND session_id = $3 ORDER BY sequence`, k.App, k.User, k.Session)
	if err != nil {
		return fmt.Errorf("read events to index: %w", err)
	}
	b := &pgx.Batch{}
	for rows.Next() {
		var seq int64
		var rec []byte
		if err := rows.Scan(&seq, &rec); err != nil {
			rows.Close()
			return fmt.Errorf("read events to index: %w", err)
		}
		ev, err := store.DecodeEvent(rec)
		if err != nil {
			rows.Close()
			return err
		}
		if args, ok := indexArgs(k, uint64(seq), ev); ok {
			b.Queue(sqlIndexEvent, args...)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read events to index: %w", err)
	}
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("index events: %w", err)
	}
	return nil
}

// memHit is a search candidate: one event and its score.
type memHit struct {
	score   float64
	nanos   int64
	session string
	seq     uint64
}

// compare orders hits best first: higher score, then newer, then session
// and sequence.
func (h memHit) compare(o memHit) int {
	if c := cmp.Compare(o.score, h.score); c != 0 {
		return c
	}
	if c := cmp.Compare(o.nanos, h.nanos); c != 0 {
		return c
	}
	if c := strings.Compare(h.session, o.session); c != 0 {
		return c
	}
	return cmp.Compare(h.seq, o.seq)
}

// memToken continues a search after the hit it names; Q ties it to its
// search (queryPrint).
type memToken struct {
	Q       string `json:"q"`
	Score   uint64 `json:"f"` // the score's bits: exact, unlike a JSON float
	Nanos   int64  `json:"t"`
	Session string `json:"s"`
	Seq     uint64 `json:"n"`
}

var errMemToken = fmt.Errorf("page_token does not continue this search: %w", store.ErrInvalidArgument)

// queryPrint ties a page token to its search: the same app, user,
// excluded session and terms.
func queryPrint(q store.MemoryQuery, terms []string) string {
	h := sha256.New()
	for _, part := range append([]string{q.App, q.User, q.ExcludeSession}, terms...) {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// SearchMemory returns the user's indexed events that share terms with
// q.Text, best first, and the next page's token (empty at the end). A
// query without terms (empty, or stop words only) finds nothing.
func (s *Store) SearchMemory(ctx context.Context, q store.MemoryQuery) ([]store.MemoryHit, string, error) {
	switch {
	case q.App == "":
		return nil, "", fmt.Errorf("app_name is empty: %w", store.ErrInvalidArgument)
	case q.User == "":
		return nil, "", fmt.Errorf("user_id is empty: %w", store.ErrInvalidArgument)
	}
	if err := checkParts(q.App, q.User, q.ExcludeSession); err != nil {
		return nil, "", err
	}
	termCounts := store.MemoryTerms(q.Text)
	terms := make([]string, 0, len(termCounts))
	for t := range termCounts {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	fp := queryPrint(q, terms)
	var after *memHit
	if q.Page.Token != "" {
		var tok memToken
		if err := decodeToken(q.Page.Token, &tok); err != nil {
			return nil, "", err
		}
		if tok.Q != fp {
			return nil, "", errMemToken
		}
		after = &memHit{score: math.Float64frombits(tok.Score), nanos: tok.Nanos, session: tok.Session, seq: tok.Seq}
	}
	if len(terms) == 0 {
		return nil, "", nil
	}
	var out []store.MemoryHit
	var next string
	err := s.query(ctx, func() error {
		// One snapshot for the postings, N and the events: a concurrent
		// append or delete cannot make them disagree.
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			hits, err := scoreHits(ctx, tx, q, terms)
			if err != nil {
				return err
			}
			top, more := best(hits, after, q.Page.Limit()+1)
			out, next, err = loadHits(ctx, tx, q, top, more, fp)
			return err
		})
	})
	if err != nil {
		return nil, "", fmt.Errorf("search memory: %w", err)
	}
	return out, next, nil
}

// scoreHits reads the user's postings of terms and returns the scored
// hits, in no order. Terms are summed in sorted order so that a hit's
// score is the same float on every page.
func scoreHits(ctx context.Context, tx pgx.Tx, q store.MemoryQuery, terms []string) ([]memHit, error) {
	var total int64
	if err := tx.QueryRow(ctx, sqlMemoryTotal, q.App, q.User).Scan(&total); err != nil {
		return nil, fmt.Errorf("count indexed events: %w", err)
	}
	rows, err := tx.Query(ctx, sqlMemoryPostings, q.App, q.User, terms, q.ExcludeSession, MaxPostingsPerTerm)
	if err != nil {
		return nil, fmt.Errorf("read postings: %w", err)
	}
	type posting struct {
		hit int
		tf  int32
	}
	byTerm := make(map[string][]posting, len(terms))
	index := make(map[memHit]int)
	var hits []memHit
	for rows.Next() {
		var term string
		var h memHit
		var seq int64
		var tf int32
		if err := rows.Scan(&term, &h.session, &seq, &tf, &h.nanos); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read postings: %w", err)
		}
		h.seq = uint64(seq)
		i, ok := index[h]
		if !ok {
			i = len(hits)
			hits = append(hits, h)
			index[h] = i
		}
		byTerm[term] = append(byTerm[term], posting{i, tf})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read postings: %w", err)
	}
	for _, t := range terms {
		ps := byTerm[t]
		df := int64(len(ps))
		idf := math.Log(1 + float64(max(total, df))/float64(max(df, 1)))
		for _, p := range ps {
			hits[p.hit].score += (1 + math.Log(float64(p.tf))) * idf
		}
	}
	return hits, nil
}

// best returns the best n hits ranked after after (all, when nil), best
// first, and whether more hits follow them.
func best(hits []memHit, after *memHit, n int) ([]memHit, bool) {
	if after != nil {
		hits = slices.DeleteFunc(hits, func(h memHit) bool { return h.compare(*after) <= 0 })
	}
	slices.SortFunc(hits, memHit.compare)
	if len(hits) > n {
		return hits[:n], true
	}
	return hits, false
}

// loadHits reads the events of hits, the best ones in order, and returns
// the page they make and the token of the next page: more says hits
// follow those given.
func loadHits(ctx context.Context, tx pgx.Tx, q store.MemoryQuery, hits []memHit, more bool, fp string) ([]store.MemoryHit, string, error) {
	events, err := readHitEvents(ctx, tx, q, hits)
	if err != nil {
		return nil, "", err
	}
	limit := q.Page.Limit()
	var out []store.MemoryHit
	size := 0
	for i, h := range hits {
		if len(out) == limit {
			return out, encodeMemToken(hits[i-1], fp), nil
		}
		rec, ok := events[h]
		if !ok {
			continue // not expected: postings go with their session
		}
		size += store.ItemBytes(len(rec) + len(h.session) + 32) // the event, its session id, score and framing
		if q.Page.MaxBytes > 0 && size > q.Page.MaxBytes && len(out) > 0 {
			return out, encodeMemToken(hits[i-1], fp), nil
		}
		ev, err := store.DecodeEvent(rec)
		if err != nil {
			return nil, "", err
		}
		out = append(out, store.MemoryHit{SessionID: h.session, Event: ev, Score: h.score})
	}
	if more && len(hits) > 0 {
		return out, encodeMemToken(hits[len(hits)-1], fp), nil
	}
	return out, "", nil
}

// readHitEvents reads the encoded events of hits, keyed by hit, in one
// round trip of primary key lookups: a join of the hits with events may
// be planned as a scan of the user's events, when the statistics of
// events are stale.
func readHitEvents(ctx context.Context, tx pgx.Tx, q store.MemoryQuery, hits []memHit) (map[memHit][]byte, error) {
	out := make(map[memHit][]byte, len(hits))
	if len(hits) == 0 {
		return out, nil
	}
	b := &pgx.Batch{}
	for _, h := range hits {
		b.Queue(sqlMemoryEvent, q.App, q.User, h.session, int64(h.seq))
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	for _, h := range hits {
		var rec []byte
		err := br.QueryRow().Scan(&rec)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("read events: %w", err)
		}
		out[h] = rec
	}
	return out, nil
}

func encodeMemToken(h memHit, fp string) string {
	return encodeToken(memToken{Q: fp, Score: math.Float64bits(h.score), Nanos: h.nanos, Session: h.session, Seq: h.seq})
}
