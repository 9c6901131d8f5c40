package boltstore

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Memory: an inverted index per app and user over the events of the
// sessions added to memory, so that a search reads the postings of its
// terms and never the user's history.
//
//	memory_sessions T(app, user, session)             -> uvarint: the watermark, the last
//	                                                     sequence whose events have postings;
//	                                                     uvarints: the merges that hold them
//	memory_postings T(app, user, term) U(^merge)      -> postings (memseg.go)
//	memory_users    T(app, user)                      -> uvarint: the user's events with postings (N, for idf)
//
// An event's id in the index is U(^time) T(session) U(seq); time is its
// timestamp in Unix nanoseconds with the sign bit flipped, so that ids
// order newest first.
//
// Why a watermark: an append to a session in memory writes nothing for
// memory. Writing a posting per term would dirty a page per term and
// double the append's commit; even one pending key costs the commit a
// page or three. The append only tells the store's memState, once it is
// committed, that the session has events past its watermark (dirty).
// The merger (mergeLoop) reads those events, splits them into terms and
// writes their postings and the new watermark in batches, where postings
// of the same term share pages, in commits of its own. A search reads the
// user's dirty sessions' events past their watermarks as well as the
// postings, so an event is found as soon as its append returns. After a
// crash, Open finds the dirty sessions again: their last sequence is
// past their watermark.
//
// The terms of an event are store.MemoryTerms of store.MemoryText: the
// merger, the search and DeleteSession compute them from the stored
// event, so they are part of the file format (a change needs a schema
// migration that rebuilds the postings).

// MaxPostingsPerTerm bounds the postings a search reads for one term (and
// the not yet merged events it reads): a term in more of the user's
// events than this ranks only those of the latest merges, and weighs as
// if it were in this many.
const MaxPostingsPerTerm = 2000

// memState is the in-process part of memory: the sessions in memory that
// hold events past their watermark. It is rebuilt from the file by Open.
type memState struct {
	mu sync.Mutex
	// dirty holds the sessions with events to merge; inflight those a
	// merge has taken and not yet committed. Both are keyed by
	// T(app, user), then session id.
	dirty, inflight map[string]map[string]store.SessionKey
	// some is set once a session may be in memory: one was at open, or
	// one was added since. Until then an append skips the lookup of its
	// session in memory_sessions, whose bucket costs allocations to open.
	some atomic.Bool
}

func (m *memState) init() {
	m.dirty = make(map[string]map[string]store.SessionKey)
	m.inflight = make(map[string]map[string]store.SessionKey)
}

func addKey(set map[string]map[string]store.SessionKey, k store.SessionKey) {
	u := string(userStateKey(k.App, k.User))
	if set[u] == nil {
		set[u] = make(map[string]store.SessionKey)
	}
	set[u][k.Session] = k
}

func removeKey(set map[string]map[string]store.SessionKey, k store.SessionKey) {
	u := string(userStateKey(k.App, k.User))
	delete(set[u], k.Session)
	if len(set[u]) == 0 {
		delete(set, u)
	}
}

// markDirty notes that session k has events past its watermark.
func (m *memState) markDirty(k store.SessionKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	addKey(m.dirty, k)
}

// take moves up to max dirty sessions to inflight and returns them.
func (m *memState) take(max int) []store.SessionKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.SessionKey
collect:
	for _, sessions := range m.dirty {
		for _, k := range sessions {
			if len(out) == max {
				break collect
			}
			out = append(out, k)
		}
	}
	for _, k := range out {
		removeKey(m.dirty, k)
		addKey(m.inflight, k)
	}
	return out
}

// finish ends the merge of keys, committed or not: again are dirty
// still.
func (m *memState) finish(keys, again []store.SessionKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		removeKey(m.inflight, k)
	}
	for _, k := range again {
		addKey(m.dirty, k)
	}
}

// sessionsOf returns the ids of the user's dirty and inflight sessions.
func (m *memState) sessionsOf(user []byte) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id := range m.dirty[string(user)] {
		out = append(out, id)
	}
	for id := range m.inflight[string(user)] {
		out = append(out, id)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// forget drops a deleted session.
func (m *memState) forget(k store.SessionKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	removeKey(m.dirty, k)
}

// recoverMemory finds the sessions in memory whose events passed their
// watermark before the last close (or crash).
func recoverMemory(tx *bbolt.Tx, m *memState) error {
	sessions := tx.Bucket(bucketSessions)
	return tx.Bucket(bucketMemSessions).ForEach(func(sk, v []byte) error {
		m.some.Store(true)
		wm, _ := binary.Uvarint(v)
		sv := sessions.Get(sk)
		if sv == nil || lastSequenceOf(sv) <= wm {
			return nil
		}
		k, err := parseSessionKey(sk)
		if err != nil {
			return fmt.Errorf("memory session key: %w", err)
		}
		addKey(m.dirty, k)
		return nil
	})
}

func parseSessionKey(sk []byte) (store.SessionKey, error) {
	var parts [3]string
	rest := sk
	for i := range parts {
		var err error
		if parts[i], rest, err = readString(rest); err != nil {
			return store.SessionKey{}, err
		}
	}
	if len(rest) != 0 {
		return store.SessionKey{}, errors.New("trailing bytes in session key")
	}
	return store.SessionKey{App: parts[0], User: parts[1], Session: parts[2]}, nil
}

// IndexSession adds session k to memory: the merger indexes its events
// so far soon after, and every event appended to it later (a search finds
// them at once). Adding a session already in memory only reads (no write,
// no fsync), so a caller may add a session after every event. Returns
// ErrNotFound for a missing session.
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
	return s.write(ctx, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketSessions).Get(sk) == nil {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		}
		marks := tx.Bucket(bucketMemSessions)
		if marks.Get(sk) != nil {
			return nil // added by a concurrent call
		}
		// Set before the put: the writes after this one in the batch
		// must look the session up. A failed commit leaves it set,
		// which costs only lookups.
		s.mem.some.Store(true)
		tx.OnCommit(func() { s.mem.markDirty(k) })
		return put(marks, sk, binary.AppendUvarint(nil, 0))
	})
}

// indexAppended notes, once tx commits, that session sk got an event to
// index when it is in memory. Sessions not in memory pay one lookup.
func indexAppended(tx *bbolt.Tx, k store.SessionKey, sk []byte, mem *memState) {
	if mem != nil && mem.some.Load() && tx.Bucket(bucketMemSessions).Get(sk) != nil {
		tx.OnCommit(func() { mem.markDirty(k) })
	}
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

// addIndexed adds d to the count of the user's events with postings.
func addIndexed(users *bbolt.Bucket, user []byte, d int64) error {
	n, _ := binary.Uvarint(users.Get(user))
	next := int64(n) + d
	if next <= 0 {
		return del(users, user)
	}
	return put(users, user, binary.AppendUvarint(nil, uint64(next)))
}

// eachEventAfter calls fn with each event of session sk after sequence
// after, decoded, until fn returns false.
func eachEventAfter(tx *bbolt.Tx, sk []byte, after uint64, fn func(seq uint64, ev *agentrunnerv1.Event) bool) error {
	c := tx.Bucket(bucketEvents).Cursor()
	for key, v := c.Seek(eventKey(sk, after+1)); key != nil && bytes.HasPrefix(key, sk); key, v = c.Next() {
		if isRunKey(key, sk) {
			continue
		}
		ev, err := store.DecodeEvent(v)
		if err != nil {
			return err
		}
		if !fn(seqOf(key), ev) {
			return nil
		}
	}
	return nil
}

// Merge bounds: a merge takes up to mergeSessions dirty sessions and
// writes the postings of up to mergeEvents of their events, in one commit
// of a segment per user and term it meets.
const (
	mergeSessions = 256
	mergeEvents   = 1024
)

// mergeLoop merges every mergeDelay until Close.
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
			more, err := s.mergeMemory(context.Background())
			if err != nil {
				if !errors.Is(err, store.ErrClosed) {
					s.opts.Logger.Error("merge memory postings", "err", err)
				}
				break
			}
			if !more {
				break
			}
		}
	}
}

// mergeMemory writes the postings of dirty sessions' events past their
// watermarks, one batch, and reports whether it left work it could have
// done (a full batch).
func (s *Store) mergeMemory(ctx context.Context) (bool, error) {
	keys := s.mem.take(mergeSessions)
	if len(keys) == 0 {
		return false, nil
	}
	var again []store.SessionKey
	err := s.write(ctx, func(tx *bbolt.Tx) error {
		var err error
		again, err = mergeSessionsTx(tx, keys)
		return err
	})
	if err != nil {
		again = keys
	}
	s.mem.finish(keys, again)
	// Only a full batch goes on at once: sessions appended to during the
	// merge wait for the next tick, so that a busy session is merged in
	// batches, not event by event.
	return len(again) > 0 || len(keys) == mergeSessions, err
}

// unmerged returns, for each of terms, the events of the user's dirty
// sessions past their watermarks that hold it, reading at most
// MaxPostingsPerTerm events, and how many events it read.
func unmerged(tx *bbolt.Tx, user []byte, sessions []string, terms map[string]int, exclude string) (map[string][]posting, int, error) {
	found := make(map[string][]posting, len(terms))
	marks := tx.Bucket(bucketMemSessions)
	read := 0
	for _, id := range sessions {
		if id == exclude {
			continue
		}
		sk := appendString(bytes.Clone(user), id)
		mark := marks.Get(sk)
		if mark == nil {
			continue
		}
		wm, _ := binary.Uvarint(mark)
		err := eachEventAfter(tx, sk, wm, func(seq uint64, ev *agentrunnerv1.Event) bool {
			if read == MaxPostingsPerTerm {
				return false
			}
			if !hasMemoryText(ev) {
				return true
			}
			read++
			eid := eventID(ev, id, seq)
			for t, count := range store.MemoryTerms(store.MemoryText(ev)) {
				if _, ok := terms[t]; ok {
					found[t] = append(found[t], posting{eid, uint64(count)})
				}
			}
			return true
		})
		if err != nil {
			return nil, 0, err
		}
	}
	return found, read, nil
}

// posting is one event holding a term: its id (memHit.id) and the term's
// count in it.
type posting struct {
	id []byte
	tf uint64
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
	// The dirty sessions are read before the transaction begins: a
	// session a merge committed before it is no longer dirty, and the
	// transaction sees that merge's postings.
	dirty := s.mem.sessionsOf(userStateKey(q.App, q.User))
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		hits, err := scoreHits(tx, q, terms, dirty)
		if err != nil {
			return err
		}
		// A page needs its hits and whether one follows: the best
		// limit+1 after the token, not the whole list sorted.
		top, more := best(hits, after, q.Page.Limit()+1)
		out, next, err = loadHits(tx, q, top, more, fp)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("search memory: %w", err)
	}
	return out, next, nil
}

// scoreHits reads the postings of terms, and the events of the user's
// dirty sessions not merged yet, and returns the scored hits, in no
// order.
func scoreHits(tx *bbolt.Tx, q store.MemoryQuery, terms map[string]int, dirty []string) ([]memHit, error) {
	user := userStateKey(q.App, q.User)
	found, read, err := unmerged(tx, user, dirty, terms, q.ExcludeSession)
	if err != nil {
		return nil, err
	}
	total, _ := binary.Uvarint(tx.Bucket(bucketMemUsers).Get(user))
	total += uint64(read)
	var excluded []byte
	if q.ExcludeSession != "" {
		excluded = appendString(nil, q.ExcludeSession)
	}
	keep := func(id []byte) bool { return excluded == nil || !bytes.HasPrefix(id[8:], excluded) }
	c := tx.Bucket(bucketMemPostings).Cursor()
	for t := range terms {
		if found[t] == nil {
			found[t] = make([]posting, 0, 256)
		}
		if found[t], err = termPostings(c, appendString(bytes.Clone(user), t), found[t], keep); err != nil {
			return nil, err
		}
	}
	n := 0
	for _, ps := range found {
		n += len(ps)
	}
	index := make(map[string]int, n)
	hits := make([]memHit, 0, n)
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
	return hits, nil
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

// best returns the best n hits ranked after after (all, when nil), best
// first, and whether more hits follow them.
func best(hits []memHit, after *memHit, n int) ([]memHit, bool) {
	h := &hitHeap{}
	more := false
	for _, c := range hits {
		if after != nil && c.compare(*after) <= 0 {
			continue
		}
		if len(*h) < n {
			heap.Push(h, c)
			continue
		}
		more = true
		if c.compare((*h)[0]) < 0 { // better than the worst kept
			(*h)[0] = c
			heap.Fix(h, 0)
		}
	}
	top := []memHit(*h)
	slices.SortFunc(top, memHit.compare)
	return top, more
}

// hitHeap keeps the worst hit on top.
type hitHeap []memHit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return h[i].compare(h[j]) > 0 }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(memHit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// loadHits reads the events of the first page of hits, the best ones in
// order, and the token of the next page: more says hits follow those
// given.
func loadHits(tx *bbolt.Tx, q store.MemoryQuery, hits []memHit, more bool, fp []byte) ([]store.MemoryHit, string, error) {
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
		ev, err := store.DecodeEvent(v)
		if err != nil {
			return nil, "", err
		}
		out = append(out, store.MemoryHit{SessionID: session, Event: ev, Score: h.score})
	}
	if more && len(hits) > 0 {
		return out, encodeMemToken(hits[len(hits)-1], fp), nil
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
