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
	"strings"
	"time"

	"go.etcd.io/bbolt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Memory: an inverted index per app and user over the events of the
// sessions added to memory, so that a search reads the postings of its
// terms and never the user's history.
//
//	memory_sessions T(app, user, session)             -> empty: the session is in memory
//	memory_pending  T(app, user)                      -> uvarint: the user's indexed events (N, for idf)
//	                T(app, user) U(^time) T(session) U(seq)
//	                                                  -> empty: the event is not in postings yet
//	memory_postings T(app, user, term) U(^time) T(session) U(seq)
//	                                                  -> uvarint: the term's count in the event
//
// time is the event's timestamp in Unix nanoseconds with the sign bit
// flipped; ^time makes a term's postings newest first, so that the
// MaxPostingsPerTerm cap keeps the newest. U(^time) T(session) U(seq) is
// an event's id in the index.
//
// Why pending: an append to a session in memory writes one small key and
// the user's count, side by side (the user's newest pending key follows
// the count), not one posting per term scattered over the postings tree,
// which would dirty a page per term and double the append's commit. The
// merger (mergeLoop) reads pending events, splits them into terms and
// writes their postings in batches, where postings of the same term
// share pages, in commits of its own. A search reads the user's pending
// events as well as the postings, so an event is found as soon as its
// append returns.
//
// The terms of an event are store.MemoryTerms of store.MemoryText: the
// merger and DeleteSession compute them again from the stored event, so
// they are part of the file format (a change needs a schema migration
// that rebuilds the postings).

// MaxPostingsPerTerm bounds the postings a search reads for one term (and
// the pending events it reads): a term in more of the user's events than
// this ranks only the newest, and counts as in this many for its weight.
const MaxPostingsPerTerm = 5000

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
	return eachEvent(tx, sk, func(seq uint64, ev *agentrunnerv1.Event) error {
		return indexEvent(tx, k, seq, ev)
	})
}

// eachEvent calls fn with each event of session sk, decoded.
func eachEvent(tx *bbolt.Tx, sk []byte, fn func(seq uint64, ev *agentrunnerv1.Event) error) error {
	c := tx.Bucket(bucketEvents).Cursor()
	for key, v := c.Seek(sk); key != nil && bytes.HasPrefix(key, sk); key, v = c.Next() {
		if isRunKey(key, sk) {
			continue
		}
		ev, err := decodeEvent(v)
		if err != nil {
			return err
		}
		if err := fn(seqOf(key), ev); err != nil {
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
	return indexEvent(tx, k, seq, ev)
}

// indexEvent records event seq of session k as pending, when it has text.
// Splitting the text into terms is left to the merger: the committer,
// which every write waits on, only writes two keys.
func indexEvent(tx *bbolt.Tx, k store.SessionKey, seq uint64, ev *agentrunnerv1.Event) error {
	if !hasMemoryText(ev) {
		return nil
	}
	user := userStateKey(k.App, k.User)
	pending := tx.Bucket(bucketMemPending)
	if err := put(pending, append(bytes.Clone(user), eventID(ev, k.Session, seq)...), nil); err != nil {
		return err
	}
	return addIndexed(pending, user, 1)
}

// hasMemoryText reports whether store.MemoryText(ev) is not empty.
func hasMemoryText(ev *agentrunnerv1.Event) bool {
	return slices.ContainsFunc(ev.GetContent().GetParts(), func(p *agentrunnerv1.Part) bool {
		return !p.GetThought() && p.GetText() != ""
	})
}

// eventID is U(^time) T(session) U(seq), event seq of session's id in the
// index.
func eventID(ev *agentrunnerv1.Event, session string, seq uint64) []byte {
	rt := ^flipNanos(store.MemoryTime(ev).UnixNano())
	b := make([]byte, 0, len(session)+18)
	return appendUint64(appendString(appendUint64(b, rt), session), seq)
}

func flipNanos(n int64) uint64 { return uint64(n) ^ 1<<63 }

// postingKey is T(app, user, term) + id; user is T(app, user).
func postingKey(user []byte, term string, id []byte) []byte {
	b := make([]byte, 0, len(user)+len(term)+2+len(id))
	return append(appendString(append(b, user...), term), id...)
}

// addIndexed adds d to the count of the user's indexed events.
func addIndexed(pending *bbolt.Bucket, user []byte, d int64) error {
	n, _ := binary.Uvarint(pending.Get(user))
	next := int64(n) + d
	if next <= 0 {
		return del(pending, user)
	}
	return put(pending, user, binary.AppendUvarint(nil, uint64(next)))
}

// unindexSession removes session k from memory: its mark, and its events'
// pending keys and postings. It runs in DeleteSession's transaction.
func unindexSession(tx *bbolt.Tx, k store.SessionKey, sk []byte) error {
	marks := tx.Bucket(bucketMemSessions)
	if marks.Get(sk) == nil {
		return nil
	}
	user := userStateKey(k.App, k.User)
	// Collect first, delete afterwards: the cursor walks the events.
	var pendingKeys, postingKeys [][]byte
	err := eachEvent(tx, sk, func(seq uint64, ev *agentrunnerv1.Event) error {
		if !hasMemoryText(ev) {
			return nil
		}
		id := eventID(ev, k.Session, seq)
		// The event is pending or has postings; deleting what is not
		// there is a no-op.
		pendingKeys = append(pendingKeys, append(bytes.Clone(user), id...))
		for t := range store.MemoryTerms(store.MemoryText(ev)) {
			postingKeys = append(postingKeys, postingKey(user, t, id))
		}
		return nil
	})
	if err != nil {
		return abortError{fmt.Errorf("memory of session %s: %w", k, err)}
	}
	pending, postings := tx.Bucket(bucketMemPending), tx.Bucket(bucketMemPostings)
	for _, key := range pendingKeys {
		if err := del(pending, key); err != nil {
			return err
		}
	}
	for _, key := range postingKeys {
		if err := del(postings, key); err != nil {
			return err
		}
	}
	if err := addIndexed(pending, user, -int64(len(pendingKeys))); err != nil {
		return err
	}
	return del(marks, sk)
}

// memHit is a search candidate: one event and its score. id is the
// event's U(^time) T(session) U(seq), the tail of its posting and
// pending keys, so that ids order newest first.
type memHit struct {
	score float64
	id    string
}

// compare orders hits best first: higher score, then newer, then session
// and sequence, so that the order is total and a page token is a hit.
func (h memHit) compare(o memHit) int {
	if c := cmp.Compare(o.score, h.score); c != 0 {
		return c
	}
	return strings.Compare(h.id, o.id)
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

// posting is one event holding a term: its id (memHit.id), referring to
// the transaction's memory, and the term's count in it.
type posting struct {
	id []byte
	tf uint64
}

// scoreHits reads the postings of terms, and the user's pending records,
// and returns the scored hits, best first.
func scoreHits(tx *bbolt.Tx, q store.MemoryQuery, terms map[string]int) []memHit {
	user := userStateKey(q.App, q.User)
	total, _ := binary.Uvarint(tx.Bucket(bucketMemPending).Get(user))
	var excluded []byte
	if q.ExcludeSession != "" {
		excluded = appendString(nil, q.ExcludeSession)
	}
	keep := func(id []byte) bool {
		return len(id) > 8 && (excluded == nil || !bytes.HasPrefix(id[8:], excluded))
	}
	found := pendingPostings(tx, user, terms, keep)
	c := tx.Bucket(bucketMemPostings).Cursor()
	for t := range terms {
		prefix := appendString(bytes.Clone(user), t)
		for key, v := c.Seek(prefix); key != nil && bytes.HasPrefix(key, prefix) && len(found[t]) < MaxPostingsPerTerm; key, v = c.Next() {
			if id := key[len(prefix):]; keep(id) {
				tf, _ := binary.Uvarint(v)
				found[t] = append(found[t], posting{id, max(tf, 1)})
			}
		}
	}
	index := make(map[string]int)
	var hits []memHit
	for _, ps := range found {
		idf := math.Log(1 + float64(max(total, uint64(len(ps))))/float64(max(len(ps), 1)))
		for _, p := range ps {
			i, ok := index[string(p.id)]
			if !ok {
				i = len(hits)
				hits = append(hits, memHit{id: string(p.id)})
				index[hits[i].id] = i
			}
			hits[i].score += (1 + math.Log(float64(p.tf))) * idf
		}
	}
	slices.SortFunc(hits, memHit.compare)
	return hits
}

// pendingPostings returns, for each of terms, the user's pending events
// that hold it; it reads at most MaxPostingsPerTerm of them, the newest.
func pendingPostings(tx *bbolt.Tx, user []byte, terms map[string]int, keep func([]byte) bool) map[string][]posting {
	found := make(map[string][]posting, len(terms))
	c := tx.Bucket(bucketMemPending).Cursor()
	events := tx.Bucket(bucketEvents)
	n := 0
	for key, _ := c.Seek(user); key != nil && bytes.HasPrefix(key, user) && n < MaxPostingsPerTerm; key, _ = c.Next() {
		id := key[len(user):]
		if !keep(id) { // the user's count, or the excluded session
			continue
		}
		n++
		ev, ok := pendingEvent(events, user, id)
		if !ok {
			continue // not expected: pending keys go with their session
		}
		for t, count := range store.MemoryTerms(store.MemoryText(ev)) {
			if _, ok := terms[t]; ok {
				found[t] = append(found[t], posting{id, uint64(count)})
			}
		}
	}
	return found
}

// pendingEvent reads the event a pending key of user names by its id.
func pendingEvent(events *bbolt.Bucket, user, id []byte) (*agentrunnerv1.Event, bool) {
	session, seq, ok := parseID(string(id))
	if !ok {
		return nil, false
	}
	v := events.Get(eventKey(appendString(bytes.Clone(user), session), seq))
	if v == nil {
		return nil, false
	}
	ev, err := decodeEvent(v)
	return ev, err == nil
}

// parseID reads the session and sequence of a hit id.
func parseID(id string) (string, uint64, bool) {
	if len(id) < 8 {
		return "", 0, false
	}
	session, rest, err := readString([]byte(id[8:]))
	if err != nil || len(rest) != 8 {
		return "", 0, false
	}
	return session, binary.BigEndian.Uint64(rest), true
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
		session, seq, ok := parseID(h.id)
		if !ok {
			return nil, "", fmt.Errorf("corrupt memory key")
		}
		k := store.SessionKey{App: q.App, User: q.User, Session: session}
		v := events.Get(eventKey(sessionKey(k), seq))
		if v == nil {
			continue // not expected: postings go with their session
		}
		size += store.ItemBytes(len(v) + len(session) + 32) // the event, its session id, score and framing
		if q.Page.MaxBytes > 0 && size > q.Page.MaxBytes && len(out) > 0 {
			return out, encodeMemToken(hits[i-1], fp), nil
		}
		ev, err := decodeEvent(v)
		if err != nil {
			return nil, "", err
		}
		out = append(out, store.MemoryHit{SessionID: session, Event: ev, Score: h.score})
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

// A memory page token is fp, the score's bits and the id of the last hit
// returned.
func encodeMemToken(h memHit, fp []byte) string {
	b := append(bytes.Clone(fp), make([]byte, 0, 8+len(h.id))...)
	return encodeToken(append(appendUint64(b, math.Float64bits(h.score)), h.id...))
}

var errMemToken = fmt.Errorf("page_token does not continue this search: %w", store.ErrInvalidArgument)

func decodeMemToken(tok string, fp []byte) (memHit, error) {
	b, err := decodeToken(tok)
	if err != nil {
		return memHit{}, err
	}
	if len(b) < len(fp)+8 || !bytes.Equal(b[:len(fp)], fp) {
		return memHit{}, errMemToken
	}
	b = b[len(fp):]
	h := memHit{score: math.Float64frombits(binary.BigEndian.Uint64(b)), id: string(b[8:])}
	if _, _, ok := parseID(h.id); !ok {
		return memHit{}, errMemToken
	}
	return h, nil
}

// mergeBatch bounds the pending events one merge moves into postings:
// a commit of some thousands of postings.
const mergeBatch = 512

// mergeLoop moves pending events into postings every mergeDelay, in
// batches, until Close.
func (s *Store) mergeLoop() {
	defer close(s.mergeDone)
	t := time.NewTicker(s.opts.mergeDelay)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		for {
			n, err := s.mergeMemory(context.Background())
			if err != nil {
				if !errors.Is(err, store.ErrClosed) {
					s.opts.Logger.Error("merge memory postings", "err", err)
				}
				break
			}
			if n < mergeBatch {
				break
			}
		}
	}
}

// mergeMemory moves up to mergeBatch pending events into postings and
// returns how many it moved. With nothing pending it only reads.
func (s *Store) mergeMemory(ctx context.Context) (int, error) {
	var pending bool
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		_, _, pending = firstPending(tx.Bucket(bucketMemPending).Cursor())
		return nil
	})
	if err != nil || !pending {
		return 0, err
	}
	var n int
	err = s.write(ctx, func(tx *bbolt.Tx) error {
		var err error
		n, err = mergePending(tx, mergeBatch)
		return err
	})
	return n, err
}

// firstPending positions c on the first pending event key (past the
// users' counts) and returns its user and id.
func firstPending(c *bbolt.Cursor) (user, id []byte, ok bool) {
	for key, _ := c.First(); key != nil; key, _ = c.Next() {
		if user, id, err := splitPendingKey(key); err == nil && len(id) > 0 {
			return user, id, true
		}
	}
	return nil, nil, false
}

// mergePending moves the first max pending events into postings, which
// it writes in key order. Merged events are those the next search finds
// in postings instead: the move is one transaction.
func mergePending(tx *bbolt.Tx, max int) (int, error) {
	type kv struct{ key, val []byte }
	var done, posts []kv
	events := tx.Bucket(bucketEvents)
	c := tx.Bucket(bucketMemPending).Cursor()
	for key, _ := c.First(); key != nil && len(done) < max; key, _ = c.Next() {
		user, id, err := splitPendingKey(key)
		if err != nil {
			return 0, abortError{err}
		}
		if len(id) == 0 {
			continue // a user's count
		}
		done = append(done, kv{key: bytes.Clone(key)})
		ev, ok := pendingEvent(events, user, id)
		if !ok {
			continue // its session is gone: nothing to index
		}
		for t, count := range store.MemoryTerms(store.MemoryText(ev)) {
			posts = append(posts, kv{postingKey(user, t, id), binary.AppendUvarint(nil, uint64(count))})
		}
	}
	slices.SortFunc(posts, func(a, b kv) int { return bytes.Compare(a.key, b.key) })
	postings, pending := tx.Bucket(bucketMemPostings), tx.Bucket(bucketMemPending)
	for _, p := range posts {
		if err := put(postings, p.key, p.val); err != nil {
			return 0, err
		}
	}
	for _, p := range done {
		if err := del(pending, p.key); err != nil {
			return 0, err
		}
	}
	return len(done), nil
}

// splitPendingKey splits a key of memory_pending into T(app, user) and
// the event id, empty for the user's count.
func splitPendingKey(key []byte) (user, id []byte, err error) {
	_, rest, err := readString(key)
	if err == nil {
		_, rest, err = readString(rest)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("pending memory key: %w", err)
	}
	user, id = key[:len(key)-len(rest)], rest
	if _, _, ok := parseID(string(id)); len(id) > 0 && !ok {
		return nil, nil, errors.New("pending memory key: bad event id")
	}
	return user, id, nil
}
