package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/bbolt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Postings are kept in segments: a merge writes, for each user and term
// it met, one key holding the postings of all the events it merged,
//
//	memory_postings T(app, user, term) U(^merge) -> (id uvarint(count))...
//
// where merge is the merge's number (the bucket's sequence) and id an
// event's U(^time) T(session) U(seq), which delimits itself. One key per
// term and merge, not per term and event: a merge of a thousand events
// writes a few thousand keys, not tens of thousands, and the newest merge
// of a term comes first. A session's record in memory_sessions lists the
// merges that hold its events, so that DeleteSession rewrites only those
// segments.

// segmentKey is T(app, user, term) U(^merge); user is T(app, user).
func segmentKey(user []byte, term string, merge uint64) []byte {
	b := make([]byte, 0, len(user)+len(term)+10)
	return appendUint64(appendString(append(b, user...), term), ^merge)
}

// idLen returns the length of the event id at the front of b, or -1.
func idLen(b []byte) int {
	for i := 8; i+1 < len(b); i++ {
		if b[i] != 0 {
			continue
		}
		switch b[i+1] {
		case 1:
			if i+2+8 > len(b) {
				return -1
			}
			return i + 2 + 8
		case 0xFF:
			i++
		default:
			return -1
		}
	}
	return -1
}

// eachPosting calls fn with each posting of segment v until it returns
// false.
func eachPosting(v []byte, fn func(id []byte, count uint64) bool) error {
	for len(v) > 0 {
		n := idLen(v)
		if n < 0 {
			return errors.New("corrupt memory segment")
		}
		count, m := binary.Uvarint(v[n:])
		if m <= 0 {
			return errors.New("corrupt memory segment")
		}
		if !fn(v[:n], count) {
			return nil
		}
		v = v[n+m:]
	}
	return nil
}

// sessionRecord is a session's value in memory_sessions: its watermark
// and the merges that hold its events, oldest first.
type sessionRecord struct {
	watermark uint64
	merges    []uint64
}

func decodeSessionRecord(v []byte) (sessionRecord, error) {
	var r sessionRecord
	wm, n := binary.Uvarint(v)
	if n <= 0 {
		return r, errors.New("corrupt memory session record")
	}
	r.watermark, v = wm, v[n:]
	for len(v) > 0 {
		m, n := binary.Uvarint(v)
		if n <= 0 {
			return r, errors.New("corrupt memory session record")
		}
		r.merges, v = append(r.merges, m), v[n:]
	}
	return r, nil
}

func (r sessionRecord) encode() []byte {
	b := binary.AppendUvarint(nil, r.watermark)
	for _, m := range r.merges {
		b = binary.AppendUvarint(b, m)
	}
	return b
}

// segmentWriter gathers one merge's postings, by user and term.
type segmentWriter map[string][]byte

func (w segmentWriter) add(user []byte, term string, id []byte, count int) {
	key := string(appendString(bytes.Clone(user), term))
	w[key] = binary.AppendUvarint(append(w[key], id...), uint64(count))
}

// mergeSessionsTx writes the postings of keys' events past their
// watermarks, at most mergeEvents of them, as one merge's segments, and
// moves the watermarks. It returns the sessions it did not finish.
func mergeSessionsTx(tx *bbolt.Tx, keys []store.SessionKey) ([]store.SessionKey, error) {
	postings := tx.Bucket(bucketMemPostings)
	merge, err := postings.NextSequence()
	if err != nil {
		return nil, abortError{fmt.Errorf("memory merge number: %w", err)}
	}
	segs := segmentWriter{}
	var again []store.SessionKey
	marks, users := tx.Bucket(bucketMemSessions), tx.Bucket(bucketMemUsers)
	budget := mergeEvents
	for _, k := range keys {
		sk := sessionKey(k)
		mark := marks.Get(sk)
		if mark == nil {
			continue // deleted meanwhile
		}
		if budget == 0 {
			again = append(again, k)
			continue
		}
		rec, err := decodeSessionRecord(mark)
		if err != nil {
			return nil, abortError{fmt.Errorf("session %s: %w", k, err)}
		}
		user, n := userStateKey(k.App, k.User), 0
		err = eachEventAfter(tx, sk, rec.watermark, func(seq uint64, ev *agentrunnerv1.Event) bool {
			if budget == 0 {
				again = append(again, k)
				return false
			}
			budget--
			rec.watermark = seq
			if hasMemoryText(ev) {
				n++
				id := eventID(ev, k.Session, seq)
				for t, count := range store.MemoryTerms(store.MemoryText(ev)) {
					segs.add(user, t, id, count)
				}
			}
			return true
		})
		if err != nil {
			return nil, abortError{fmt.Errorf("memory of session %s: %w", k, err)}
		}
		if n > 0 {
			rec.merges = append(rec.merges, merge)
		}
		if err := put(marks, sk, rec.encode()); err != nil {
			return nil, err
		}
		if err := addIndexed(users, user, int64(n)); err != nil {
			return nil, err
		}
	}
	prefixes := make([]string, 0, len(segs))
	for p := range segs {
		prefixes = append(prefixes, p)
	}
	slices.Sort(prefixes) // segments of one user side by side
	for _, p := range prefixes {
		if err := put(postings, appendUint64([]byte(p), ^merge), segs[p]); err != nil {
			return nil, err
		}
	}
	return again, nil
}

// unindexSession removes session k from memory: its mark and its events'
// postings, which it cuts out of the segments its record names. It runs
// in DeleteSession's transaction.
func (s *Store) unindexSession(tx *bbolt.Tx, k store.SessionKey, sk []byte) error {
	marks := tx.Bucket(bucketMemSessions)
	mark := marks.Get(sk)
	if mark == nil {
		return nil
	}
	rec, err := decodeSessionRecord(mark)
	if err != nil {
		return abortError{fmt.Errorf("session %s: %w", k, err)}
	}
	terms, events, err := sessionTerms(tx, k, sk, rec.watermark)
	if err != nil {
		return abortError{fmt.Errorf("memory of session %s: %w", k, err)}
	}
	user := userStateKey(k.App, k.User)
	own := appendString(nil, k.Session)
	postings := tx.Bucket(bucketMemPostings)
	for _, t := range terms {
		for _, m := range rec.merges {
			if err := cutSegment(postings, segmentKey(user, t, m), own); err != nil {
				return err
			}
		}
	}
	if err := addIndexed(tx.Bucket(bucketMemUsers), user, -int64(events)); err != nil {
		return err
	}
	tx.OnCommit(func() { s.mem.forget(k) })
	return del(marks, sk)
}

// sessionTerms returns the distinct terms of session sk's events up to
// the watermark, and how many of them have text.
func sessionTerms(tx *bbolt.Tx, k store.SessionKey, sk []byte, watermark uint64) ([]string, int, error) {
	seen := map[string]bool{}
	events := 0
	err := eachEventAfter(tx, sk, 0, func(seq uint64, ev *agentrunnerv1.Event) bool {
		if seq > watermark {
			return false // no postings yet
		}
		if hasMemoryText(ev) {
			events++
			for t := range store.MemoryTerms(store.MemoryText(ev)) {
				seen[t] = true
			}
		}
		return true
	})
	terms := make([]string, 0, len(seen))
	for t := range seen {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	return terms, events, err
}

// cutSegment removes the postings of the session whose T(session) is own
// from the segment at key, deleting a segment left empty.
func cutSegment(b *bbolt.Bucket, key, own []byte) error {
	v := b.Get(key)
	if v == nil {
		return nil
	}
	var kept []byte
	err := eachPosting(v, func(id []byte, count uint64) bool {
		if !bytes.HasPrefix(id[8:], own) {
			kept = binary.AppendUvarint(append(kept, id...), count)
		}
		return true
	})
	switch {
	case err != nil:
		return abortError{err}
	case len(kept) == len(v):
		return nil
	case len(kept) == 0:
		return del(b, key)
	}
	return put(b, key, kept)
}

// termPostings appends to found the postings of term (prefix is
// T(app, user, term)), newest merge first, until found holds
// MaxPostingsPerTerm; keep filters them.
func termPostings(c *bbolt.Cursor, prefix []byte, found []posting, keep func(id []byte) bool) ([]posting, error) {
	for key, v := c.Seek(prefix); key != nil && bytes.HasPrefix(key, prefix) && len(found) < MaxPostingsPerTerm; key, v = c.Next() {
		err := eachPosting(v, func(id []byte, count uint64) bool {
			if keep(id) {
				found = append(found, posting{id, max(count, 1)})
			}
			return len(found) < MaxPostingsPerTerm
		})
		if err != nil {
			return nil, err
		}
	}
	return found, nil
}
