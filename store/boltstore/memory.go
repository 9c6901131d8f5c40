package boltstore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"go.etcd.io/bbolt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Memory: an inverted index per app and user over the events of the
// sessions added to memory, kept in the transaction that appends each
// event, so that a search reads the postings of its terms and never the
// user's history.
//
//	memory_sessions T(app, user, session)             -> empty: the session is in memory
//	memory_postings T(app, user, term) U(^time) T(session) U(seq)
//	                                                  -> uvarint: the term's count in the event
//	memory_events   T(app, user, session) U(seq)      -> U(^time) T(term)...: what to delete with the session
//	memory_users    T(app, user)                      -> uvarint: the user's indexed events (for idf)
//
// time is the event's timestamp in Unix nanoseconds with the sign bit
// flipped; ^time makes a term's postings newest first, so that the
// MaxPostingsPerTerm cap keeps the newest.

// MaxPostingsPerTerm bounds the postings a search reads for one term: a
// term in more of the user's events than this ranks only the newest.
const MaxPostingsPerTerm = 20000

// IndexSession adds session k to memory: its events so far are indexed
// now, in one transaction, and every event appended to it later in the
// append's own transaction. Adding a session already in memory only reads
// (no write, no fsync), so a caller may add a session after every event.
// Returns ErrNotFound for a missing session.
func (s *Store) IndexSession(ctx context.Context, k store.SessionKey) error {
	if err := validateKey(k); err != nil {
		return err
	}
	sk := sessionKey(k)
	var indexed bool
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketSessions).Get(sk) == nil {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		}
		indexed = tx.Bucket(bucketMemSessions).Get(sk) != nil
		return nil
	})
	if err != nil || indexed {
		return err
	}
	return s.writeSession(ctx, sk, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketSessions).Get(sk) == nil {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		}
		marks := tx.Bucket(bucketMemSessions)
		if marks.Get(sk) != nil {
			return nil // added by a concurrent call
		}
		if err := indexStoredEvents(tx, k, sk); err != nil {
			return abortError{err}
		}
		return put(marks, sk, nil)
	})
}

// indexStoredEvents indexes the events session k holds.
func indexStoredEvents(tx *bbolt.Tx, k store.SessionKey, sk []byte) error {
	c := tx.Bucket(bucketEvents).Cursor()
	for key, v := c.Seek(sk); key != nil && bytes.HasPrefix(key, sk); key, v = c.Next() {
		if isRunKey(key, sk) {
			continue
		}
		ev, err := decodeEvent(v)
		if err != nil {
			return err
		}
		if err := indexEvent(tx, k, sk, seqOf(key), ev); err != nil {
			return err
		}
	}
	return nil
}

// indexAppended indexes an event appended to session sk when the session
// is in memory. Sessions not in memory pay one lookup.
func indexAppended(tx *bbolt.Tx, k store.SessionKey, sk []byte, seq uint64, ev *agentrunnerv1.Event) error {
	if tx.Bucket(bucketMemSessions).Get(sk) == nil {
		return nil
	}
	return indexEvent(tx, k, sk, seq, ev)
}

// indexEvent writes the postings of event seq of session k.
func indexEvent(tx *bbolt.Tx, k store.SessionKey, sk []byte, seq uint64, ev *agentrunnerv1.Event) error {
	terms := store.MemoryTerms(store.MemoryText(ev))
	if len(terms) == 0 {
		return nil
	}
	names := make([]string, 0, len(terms))
	for t := range terms {
		names = append(names, t)
	}
	slices.Sort(names) // postings of one event land in key order
	rt := ^flipNanos(store.MemoryTime(ev).UnixNano())
	user := userStateKey(k.App, k.User)
	record := appendUint64(nil, rt)
	postings := tx.Bucket(bucketMemPostings)
	for _, t := range names {
		key := postingKey(user, t, rt, k.Session, seq)
		if err := put(postings, key, binary.AppendUvarint(nil, uint64(terms[t]))); err != nil {
			return err
		}
		record = appendString(record, t)
	}
	if err := put(tx.Bucket(bucketMemEvents), eventKey(sk, seq), record); err != nil {
		return err
	}
	return addIndexed(tx.Bucket(bucketMemUsers), user, 1)
}

func flipNanos(n int64) uint64 { return uint64(n) ^ 1<<63 }

// postingKey is T(app, user, term) U(^time) T(session) U(seq); user is
// T(app, user).
func postingKey(user []byte, term string, rt uint64, session string, seq uint64) []byte {
	b := make([]byte, 0, len(user)+len(term)+len(session)+20)
	b = appendString(append(b, user...), term)
	return appendUint64(appendString(appendUint64(b, rt), session), seq)
}

// addIndexed adds d to the count of the user's indexed events.
func addIndexed(users *bbolt.Bucket, user []byte, d int64) error {
	n, _ := binary.Uvarint(users.Get(user))
	next := int64(n) + d
	if next <= 0 {
		return del(users, user)
	}
	return put(users, user, binary.AppendUvarint(nil, uint64(next)))
}

// unindexSession removes session k from memory: its mark, postings and
// records. It runs in DeleteSession's transaction.
func unindexSession(tx *bbolt.Tx, k store.SessionKey, sk []byte) error {
	marks := tx.Bucket(bucketMemSessions)
	if marks.Get(sk) == nil {
		return nil
	}
	events, postings := tx.Bucket(bucketMemEvents), tx.Bucket(bucketMemPostings)
	user := userStateKey(k.App, k.User)
	keys := collectPrefix(events, sk)
	for _, key := range keys {
		rec := events.Get(key)
		if len(rec) < 8 {
			return abortError{fmt.Errorf("memory record of session %s: short", k)}
		}
		rt, rest := binary.BigEndian.Uint64(rec), rec[8:]
		for len(rest) > 0 {
			t, more, err := readString(rest)
			if err != nil {
				return abortError{fmt.Errorf("memory record of session %s: %w", k, err)}
			}
			if err := del(postings, postingKey(user, t, rt, k.Session, seqOf(key))); err != nil {
				return err
			}
			rest = more
		}
		if err := del(events, key); err != nil {
			return err
		}
	}
	if err := addIndexed(tx.Bucket(bucketMemUsers), user, -int64(len(keys))); err != nil {
		return err
	}
	return del(marks, sk)
}

// memHit is a search candidate: one event and its score.
type memHit struct {
	score   float64
	rt      uint64 // ^time: smaller is newer
	session string
	seq     uint64
}

// before orders hits best first: higher score, then newer, then session
// and sequence, so that the order is total and a page token is a hit.
func (h memHit) compare(o memHit) int {
	if c := cmp.Compare(o.score, h.score); c != 0 {
		return c
	}
	if c := cmp.Compare(h.rt, o.rt); c != 0 {
		return c
	}
	if c := cmp.Compare(h.session, o.session); c != 0 {
		return c
	}
	return cmp.Compare(h.seq, o.seq)
}

// SearchMemory returns the user's indexed events that share terms with
// q.Text, best first: each matching term adds (1 + ln tf) * ln(1 + N/df),
// where tf is its count in the event, df the number of the user's events
// holding it and N the user's indexed events; ties go to the newer event.
// The next page token is empty at the end. A query without terms (empty,
// or stop words only) finds nothing.
func (s *Store) SearchMemory(ctx context.Context, q store.MemoryQuery) ([]store.MemoryHit, string, error) {
	switch {
	case q.App == "":
		return nil, "", fmt.Errorf("app_name is empty: %w", store.ErrInvalidArgument)
	case q.User == "":
		return nil, "", fmt.Errorf("user_id is empty: %w", store.ErrInvalidArgument)
	}
	if err := checkParts(q.App, q.User); err != nil {
		return nil, "", err
	}
	terms := store.MemoryTerms(q.Text)
	fp := queryPrint(q, terms)
	var after *memHit
	if q.Page.Token != "" {
		h, err := decodeMemToken(q.Page.Token, fp)
		if err != nil {
			return nil, "", err
		}
		after = &h
	}
	if len(terms) == 0 {
		return nil, "", nil
	}
	var out []store.MemoryHit
	var next string
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		hits := scoreHits(tx, q, terms)
		if after != nil {
			i, _ := slices.BinarySearchFunc(hits, *after, func(h, a memHit) int {
				if h.compare(a) <= 0 {
					return -1
				}
				return 1
			})
			hits = hits[i:]
		}
		var err error
		out, next, err = loadHits(tx, q, hits, fp)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("search memory: %w", err)
	}
	return out, next, nil
}

// scoreHits reads the postings of terms and returns the scored hits,
// best first.
func scoreHits(tx *bbolt.Tx, q store.MemoryQuery, terms map[string]int) []memHit {
	user := userStateKey(q.App, q.User)
	total, _ := binary.Uvarint(tx.Bucket(bucketMemUsers).Get(user))
	type hitKey struct {
		session string
		seq     uint64
	}
	scores := make(map[hitKey]*memHit)
	c := tx.Bucket(bucketMemPostings).Cursor()
	for t := range terms {
		prefix := appendString(bytes.Clone(user), t)
		type posting struct {
			h  memHit
			tf uint64
		}
		var found []posting
		for key, v := c.Seek(prefix); key != nil && bytes.HasPrefix(key, prefix) && len(found) < MaxPostingsPerTerm; key, v = c.Next() {
			h, ok := parsePosting(key[len(prefix):])
			if !ok || h.session == q.ExcludeSession {
				continue
			}
			tf, _ := binary.Uvarint(v)
			found = append(found, posting{h, max(tf, 1)})
		}
		idf := math.Log(1 + float64(max(total, uint64(len(found))))/float64(max(len(found), 1)))
		for _, p := range found {
			hk := hitKey{p.h.session, p.h.seq}
			h := scores[hk]
			if h == nil {
				h = &memHit{rt: p.h.rt, session: p.h.session, seq: p.h.seq}
				scores[hk] = h
			}
			h.score += (1 + math.Log(float64(p.tf))) * idf
		}
	}
	hits := make([]memHit, 0, len(scores))
	for _, h := range scores {
		hits = append(hits, *h)
	}
	slices.SortFunc(hits, memHit.compare)
	return hits
}

// parsePosting reads U(^time) T(session) U(seq), a posting key after its
// T(app, user, term) prefix.
func parsePosting(b []byte) (memHit, bool) {
	if len(b) < 8 {
		return memHit{}, false
	}
	session, rest, err := readString(b[8:])
	if err != nil || len(rest) != 8 {
		return memHit{}, false
	}
	return memHit{rt: binary.BigEndian.Uint64(b), session: session, seq: binary.BigEndian.Uint64(rest)}, true
}

// loadHits reads the events of the first page of hits and the token of
// the next page.
func loadHits(tx *bbolt.Tx, q store.MemoryQuery, hits []memHit, fp []byte) ([]store.MemoryHit, string, error) {
	limit := q.Page.Limit()
	events := tx.Bucket(bucketEvents)
	var out []store.MemoryHit
	size := 0
	for i, h := range hits {
		if len(out) == limit {
			return out, encodeMemToken(hits[i-1], fp), nil
		}
		k := store.SessionKey{App: q.App, User: q.User, Session: h.session}
		v := events.Get(eventKey(sessionKey(k), h.seq))
		if v == nil {
			continue // not expected: postings go with their session
		}
		size += store.ItemBytes(len(v) + len(h.session) + 32) // the event, its session id, score and framing
		if q.Page.MaxBytes > 0 && size > q.Page.MaxBytes && len(out) > 0 {
			return out, encodeMemToken(hits[i-1], fp), nil
		}
		ev, err := decodeEvent(v)
		if err != nil {
			return nil, "", err
		}
		out = append(out, store.MemoryHit{SessionID: h.session, Event: ev, Score: h.score})
	}
	return out, "", nil
}

// queryPrint ties a page token to its search: the same app, user,
// excluded session and terms.
func queryPrint(q store.MemoryQuery, terms map[string]int) []byte {
	names := make([]string, 0, len(terms))
	for t := range terms {
		names = append(names, t)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, part := range append([]string{q.App, q.User, q.ExcludeSession}, names...) {
		h.Write(appendString(nil, part))
	}
	return h.Sum(nil)[:8]
}

// A memory page token is fp, the score's bits, ^time, seq and T(session)
// of the last hit returned.
func encodeMemToken(h memHit, fp []byte) string {
	b := append(bytes.Clone(fp), make([]byte, 0, 24+len(h.session)+2)...)
	b = appendUint64(appendUint64(appendUint64(b, math.Float64bits(h.score)), h.rt), h.seq)
	return encodeToken(appendString(b, h.session))
}

var errMemToken = fmt.Errorf("page_token does not continue this search: %w", store.ErrInvalidArgument)

func decodeMemToken(tok string, fp []byte) (memHit, error) {
	b, err := decodeToken(tok)
	if err != nil {
		return memHit{}, err
	}
	if len(b) < len(fp)+24 || !bytes.Equal(b[:len(fp)], fp) {
		return memHit{}, errMemToken
	}
	b = b[len(fp):]
	session, rest, err := readString(b[24:])
	if err != nil || len(rest) != 0 {
		return memHit{}, errors.Join(errMemToken, err)
	}
	return memHit{
		score:   math.Float64frombits(binary.BigEndian.Uint64(b)),
		rt:      binary.BigEndian.Uint64(b[8:]),
		seq:     binary.BigEndian.Uint64(b[16:]),
		session: session,
	}, nil
}
