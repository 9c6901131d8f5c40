package boltstore

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// The run index lists the active runs across sessions (ListRunsOf without
// a session, for the console's runs board), newest first, without walking
// any session. Its entries live in run_records, beside the records and the
// unfinished marks:
//
//	run_records  'v' T(app, user) N(create) T(run_id)  -> empty, while the run is active
//
// create is the stored create_time, which never changes. A run's entry
// (store.Active: PENDING, RUNNING, INPUT_REQUIRED) comes and goes with the
// writes that change its status, in their transaction (runPlan.index).
// planRun reads the stored status with the record it reads anyway: the
// index costs no read of its own. The entries, as few as the runs in
// flight, sort after every record: a run's start and end dirty their leaf
// and the record's. They are also what recovery reads (ListUnfinishedRuns:
// the PENDING and RUNNING runs are among them). An app's listing (admins
// only) merges its users' ranges (appRanges).
//
// Runs of every status are not indexed: an entry per run ('i', kind
// indexAll, which schema 7 files of an earlier build may hold and which
// nothing reads) dirtied a leaf and a branch page more in each commit, a
// tenth of a single-session run. A listing of ended runs across sessions
// reads every run record instead (scan).
//
// A page token is the place of the last run listed: the listing's scope
// ('a' T(app) or 'u' T(app, user)) then N(create) T(run_id). The same
// token continues a listing of active runs or of all runs.

// Kinds of the run index's entries in run_records: indexActive is the
// one written; indexAll names the walk of every status (scan).
const (
	indexAll    = 'i'
	indexActive = 'v'
)

// Kinds of the scopes of page tokens (places): an app's runs, a user's.
const (
	scopeApp  = 'a'
	scopeUser = 'u'
)

// indexScope is kind T(app) for an app's runs, kind T(app, user) for a
// user's: the prefix of the places of one listing.
func indexScope(kind byte, app, user string) []byte {
	b := appendString([]byte{kind}, app)
	if kind == scopeUser {
		b = appendString(b, user)
	}
	return b
}

// indexEntry is scope N(create) T(run_id).
func indexEntry(scope []byte, nanos int64, runID string) []byte {
	b := make([]byte, 0, len(scope)+8+len(runID)+2)
	return appendString(appendUint64(append(b, scope...), uint64(nanos)^1<<63), runID)
}

// indexKey is the run_records entry of kind (indexAll or indexActive) of
// a run.
func indexKey(kind byte, app, user string, nanos int64, runID string) []byte {
	return indexEntry(appendString(appendString([]byte{kind}, app), user), nanos, runID)
}

// index keeps the run index for the planned write: the run's entry when
// its status enters the active ones, its deletion when it leaves them. It
// fails only with an abortError.
func (p *runPlan) index(records *bbolt.Bucket) error {
	if p.active == 0 {
		return nil
	}
	app, user, id := p.w.rec.GetAppName(), p.w.rec.GetUserId(), p.w.rec.GetRunId()
	nanos := runNanos(p.key, p.w.sk)
	switch p.active {
	case 1:
		return put(records, indexKey(indexActive, app, user, nanos, id), []byte{})
	case -1:
		return del(records, indexKey(indexActive, app, user, nanos, id))
	}
	return nil
}

// entryNanos returns the create time of a place whose scope is n bytes
// long.
func entryNanos(key []byte, n int) int64 {
	return int64(binary.BigEndian.Uint64(key[n:]) ^ 1<<63)
}

// runKeyOwner returns the app and the user of a run key and the key of
// its session.
func runKeyOwner(key []byte) (app, user string, sk []byte, err error) {
	app, rest, err := readString(key)
	if err == nil {
		user, rest, err = readString(rest)
	}
	if err == nil {
		_, rest, err = readString(rest)
	}
	if err != nil {
		return "", "", nil, err
	}
	return app, user, key[:len(key)-len(rest)], nil
}

// sessionIndexKeys are both run index entries of the run whose key in
// its session's list is key, active or not: what DeleteSession deletes
// (deleting an absent entry is a no-op).
func sessionIndexKeys(key []byte, runID string) ([][]byte, error) {
	app, user, sk, err := runKeyOwner(key)
	if err != nil {
		return nil, err
	}
	nanos := runNanos(key, sk)
	return [][]byte{indexKey(indexAll, app, user, nanos, runID), indexKey(indexActive, app, user, nanos, runID)}, nil
}

// migrateRunIndex (schema 6 -> 7) builds the run index from the records:
// every run's entry, and the active entry of the active ones. It collects
// the entries before it puts them: a bucket must not change under a
// cursor that walks it.
func migrateRunIndex(tx *bbolt.Tx) error {
	records := tx.Bucket(bucketRunRecords)
	var keys [][]byte
	c := records.Cursor()
	for k, _ := c.Seek([]byte{'r'}); k != nil && k[0] == 'r'; k, _ = c.Next() {
		runID, _, err := readString(k[1:])
		if err != nil {
			return fmt.Errorf("run_records key %x: %w", k, err)
		}
		key, v, err := storedRun(tx, runID)
		if err != nil {
			return err
		}
		app, user, sk, err := runKeyOwner(key)
		if err != nil {
			return fmt.Errorf("run %s: run key: %w", runID, err)
		}
		nanos := runNanos(key, sk)
		if _, st := requestAndStatusOf(v); store.Active(st) {
			keys = append(keys, indexKey(indexActive, app, user, nanos, runID))
		}
	}
	for _, k := range keys {
		if err := records.Put(k, []byte{}); err != nil {
			return err
		}
	}
	return nil
}

// ListRunsOf implements store.RunStore.
func (s *Store) ListRunsOf(ctx context.Context, f store.RunFilter, page store.Page) ([]*agentrunnerv1.Run, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	if err := f.Validate(checkPart); err != nil {
		return nil, "", err
	}
	if f.Session != "" {
		return s.listSessionRuns(ctx, store.SessionKey{App: f.App, User: f.User, Session: f.Session}, f, page)
	}
	kind := byte(scopeUser)
	if f.User == "" {
		kind = scopeApp
	}
	scope := indexScope(kind, f.App, f.User)
	bound, err := acrossBound(scope, page.Token)
	if err != nil {
		return nil, "", err
	}
	queued := s.later.ofScope(f.App, f.User)
	var (
		out  []*agentrunnerv1.Run
		next string
	)
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		w := acrossWalk{f: f, scope: scope, bound: bound, queued: queued}
		var err error
		out, next, err = w.list(tx, page.Limit())
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// acrossBound returns the entry a page of the listing of scope starts
// before: past every entry of the scope for the first page.
func acrossBound(scope []byte, token string) ([]byte, error) {
	if token == "" {
		return successor(scope), nil
	}
	tok, err := decodeToken(token)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(tok, scope) || len(tok) < len(scope)+8+2 {
		return nil, fmt.Errorf("page_token belongs to another listing: %w", store.ErrInvalidArgument)
	}
	if _, rest, err := readString(tok[len(scope)+8:]); err != nil || len(rest) != 0 {
		return nil, fmt.Errorf("page_token belongs to another listing: %w", store.ErrInvalidArgument)
	}
	return tok, nil
}

// acrossWalk is one page of a listing across sessions: a backward walk,
// from bound, of the index ranges of the scope's users (the active
// entries when the filter keeps only active runs), with the records
// PutRunLater queued overlaid.
type acrossWalk struct {
	f      store.RunFilter
	scope  []byte // the scope of bound and of the token: scopeApp or scopeUser
	bound  []byte
	queued map[string]*runWrite
}

// walkKind is the kind of the entries the walk reads.
func (w *acrossWalk) walkKind() byte {
	if w.f.OnlyActive() {
		return indexActive
	}
	return indexAll
}

// list returns up to limit runs and the token of the next page. Entries
// from the index and queued records with none there merge by place.
func (w *acrossWalk) list(tx *bbolt.Tx, limit int) ([]*agentrunnerv1.Run, string, error) {
	records := tx.Bucket(bucketRunRecords)
	kind := w.walkKind()
	var src placeSource
	var err error
	if kind == indexActive {
		src, err = w.ranges(records, kind)
	} else {
		// One more than the page tells whether there is a next one; a
		// queued record the page meets may turn out not to be kept.
		src, err = w.scan(tx, limit+1+len(w.queued))
	}
	if err != nil {
		return nil, "", err
	}
	extra := w.queuedOutside(tx, records, kind)
	entry := src.next()
	var (
		out  []*agentrunnerv1.Run
		last []byte
	)
	for {
		var (
			rec   *agentrunnerv1.Run
			place []byte
			err   error
		)
		switch {
		case entry == nil && len(extra) == 0:
			return out, "", nil
		case len(extra) > 0 && (entry == nil || bytes.Compare(extra[0].key, entry) > 0):
			rec, place, extra = extra[0].rec.CloneVT(), extra[0].key, extra[1:]
		default:
			place = entry
			rec, err = w.entryRun(tx, entry)
			entry = src.next()
		}
		if err != nil {
			return nil, "", err
		}
		if rec == nil || !w.f.Keeps(rec.GetStatus()) {
			continue
		}
		if len(out) == limit {
			return out, encodeToken(last), nil
		}
		out, last = append(out, rec), place
	}
}

// placeSource gives a walk's places, newest first; nil at the end.
type placeSource interface{ next() []byte }

// scannedPlaces are places found by a scan, sorted newest first.
type scannedPlaces [][]byte

func (s *scannedPlaces) next() []byte {
	if len(*s) == 0 {
		return nil
	}
	p := (*s)[0]
	*s = (*s)[1:]
	return p
}

// scan returns the places before the walk's bound of every stored run of
// its scope, read from every run record of the store. Runs of every
// status have no index of their own: one entry per run, written with its
// first record, cost a single-session run a tenth of its time (a leaf and
// a branch page more in each commit), and only a listing of ended runs
// across sessions needs it, so that listing pays instead, in proportion
// to the store's runs. The runs board lists the active runs, which are
// indexed.
//
// It keeps only the keep newest places whose stored status the filter
// keeps (or whose record is queued, which may change it), in a heap, so
// that a page costs memory in proportion to its size, not to the store.
func (w *acrossWalk) scan(tx *bbolt.Tx, keep int) (*scannedPlaces, error) {
	// Every record is looked at, so none costs an allocation unless it
	// is kept: the owner is matched on the key's bytes, the place is built
	// in one buffer, and a kept place takes over the slot of the one it
	// pushes out.
	owner := appendString(nil, w.f.App)
	if w.f.User != "" {
		owner = appendString(owner, w.f.User)
	}
	var (
		h     oldestFirst
		place []byte
	)
	// Newest run ids first: ids that start with their creation time (the
	// runner's) then come in about the order of the places, and once the
	// heap is full most records are older than all it keeps. Any order
	// gives the same places.
	c := tx.Bucket(bucketRunRecords).Cursor()
	for k, entry := seekBefore(c, []byte{'r' + 1}); k != nil && k[0] == 'r'; k, entry = c.Prev() {
		key, v, ok := splitRecordEntry(entry)
		if !ok {
			return nil, fmt.Errorf("run_records key %x: corrupt entry", k)
		}
		if !bytes.HasPrefix(key, owner) {
			continue
		}
		n := stringsLen(key, 3) // T(app, user, session): the session's key
		if n < 0 || len(key) < n+16 {
			return nil, fmt.Errorf("run_records key %x: corrupt run key", k)
		}
		if !w.f.Keeps(recordStatus(v)) && !w.isQueued(k) {
			continue
		}
		// scope N(create) T(run_id); k is 'r' T(run_id).
		place = append(appendUint64(append(place[:0], w.scope...), uint64(runNanos(key, key[:n]))^1<<63), k[1:]...)
		switch {
		case bytes.Compare(place, w.bound) >= 0:
		case len(h) < keep:
			heap.Push(&h, bytes.Clone(place))
		case bytes.Compare(place, h[0]) > 0:
			h[0] = append(h[0][:0], place...)
			heap.Fix(&h, 0)
		}
	}
	out := scannedPlaces(h)
	slices.SortFunc(out, func(a, b []byte) int { return bytes.Compare(b, a) })
	return &out, nil
}

// isQueued reports whether the run of run_records key k ('r' T(run_id))
// has a record PutRunLater queued, which may change its status.
func (w *acrossWalk) isQueued(k []byte) bool {
	if len(w.queued) == 0 {
		return false
	}
	id, _, err := readString(k[1:])
	return err == nil && w.queued[id] != nil
}

// stringsLen returns the length of the first n strings of the tuple key,
// or -1 when it does not start with n well-formed strings.
func stringsLen(key []byte, n int) int {
	i := 0
	for ; n > 0; n-- {
		for {
			j := bytes.IndexByte(key[i:], 0)
			if j < 0 || i+j+1 >= len(key) {
				return -1
			}
			i += j + 2
			if key[i-1] == 1 {
				break // the terminator
			}
			if key[i-1] != 0xFF {
				return -1 // neither an escaped 0x00 nor the end
			}
		}
	}
	return i
}

// oldestFirst is a heap of places with the oldest (smallest) on top.
type oldestFirst [][]byte

func (h oldestFirst) Len() int           { return len(h) }
func (h oldestFirst) Less(i, j int) bool { return bytes.Compare(h[i], h[j]) < 0 }
func (h oldestFirst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *oldestFirst) Push(x any)        { *h = append(*h, x.([]byte)) }
func (h *oldestFirst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ranges returns the walk's entries of kind as places, newest first: a
// user's range, or the merge of the ranges of every user of the app.
func (w *acrossWalk) ranges(records *bbolt.Bucket, kind byte) (*mergedRanges, error) {
	if w.scope[0] == scopeUser {
		prefix := indexScope(scopeUser, w.f.App, w.f.User)
		prefix[0] = kind
		return newMerged([]*userRange{w.userRange(records, prefix)}), nil
	}
	return w.appRanges(records, kind)
}

// appRanges opens the range of kind of every user of the app that has
// one. It costs two seeks per such user on every page, whatever the page
// size, then a heap step per entry read: for the active entries, fewer
// than the runs in flight; for all statuses, proportional to the app's
// users with runs, which only an admin's listing of every run pays.
func (w *acrossWalk) appRanges(records *bbolt.Bucket, kind byte) (*mergedRanges, error) {
	appPrefix := appendString([]byte{kind}, w.f.App)
	var out []*userRange
	c := records.Cursor()
	for k, _ := c.Seek(appPrefix); k != nil && bytes.HasPrefix(k, appPrefix); {
		_, rest, err := readString(k[len(appPrefix):])
		if err != nil {
			return nil, fmt.Errorf("run index entry %x: %w", k, err)
		}
		prefix := bytes.Clone(k[:len(k)-len(rest)])
		if r := w.userRange(records, prefix); r.place != nil {
			out = append(out, r)
		}
		k, _ = c.Seek(successor(prefix))
	}
	return newMerged(out), nil
}

// userRange opens the backward walk of the entries with prefix (kind
// T(app, user)) that sort before the walk's bound.
func (w *acrossWalk) userRange(records *bbolt.Bucket, prefix []byte) *userRange {
	bound := successor(prefix)
	if len(w.bound) > len(w.scope) { // not the first page
		bound = append(bytes.Clone(prefix), w.bound[len(w.scope):]...)
	}
	r := &userRange{c: records.Cursor(), prefix: prefix, scope: w.scope}
	k, _ := seekBefore(r.c, bound)
	r.at(k)
	return r
}

// userRange is a backward walk of one user's entries; place is the
// current one's, in the walk's scope, nil past the range.
type userRange struct {
	c      *bbolt.Cursor
	prefix []byte
	scope  []byte
	place  []byte
}

func (r *userRange) at(k []byte) {
	r.place = nil
	if k != nil && bytes.HasPrefix(k, r.prefix) {
		suffix := k[len(r.prefix):]
		r.place = append(append(make([]byte, 0, len(r.scope)+len(suffix)), r.scope...), suffix...)
	}
}

// mergedRanges merges user ranges newest first: a heap on their current
// places, greatest on top.
type mergedRanges []*userRange

func newMerged(rs []*userRange) *mergedRanges {
	h := mergedRanges(rs)
	heap.Init(&h)
	return &h
}

// next returns the newest place left and steps past it; nil at the end.
func (h *mergedRanges) next() []byte {
	if len(*h) == 0 || (*h)[0].place == nil {
		return nil
	}
	top := (*h)[0]
	place := top.place
	k, _ := top.c.Prev()
	top.at(k)
	if top.place == nil {
		heap.Pop(h)
	} else {
		heap.Fix(h, 0)
	}
	return place
}

func (h mergedRanges) Len() int           { return len(h) }
func (h mergedRanges) Less(i, j int) bool { return bytes.Compare(h[i].place, h[j].place) > 0 }
func (h mergedRanges) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *mergedRanges) Push(x any)        { *h = append(*h, x.(*userRange)) }
func (h *mergedRanges) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// entryRun returns the record of the run a place names, its queued one
// when there is one; nil when the filter does not keep its stored status
// (read without decoding the record).
func (w *acrossWalk) entryRun(tx *bbolt.Tx, place []byte) (*agentrunnerv1.Run, error) {
	id, _, err := readString(place[len(w.scope)+8:])
	if err != nil {
		return nil, fmt.Errorf("run index entry %x: %w", place, err)
	}
	if q := w.queued[id]; q != nil {
		rec := q.rec.CloneVT()
		if nanos := entryNanos(place, len(w.scope)); nanos != q.nanos {
			rec.CreateTime = timestamppb.New(time.Unix(0, nanos))
		}
		return rec, nil
	}
	_, v, err := storedRun(tx, id)
	switch {
	case err != nil:
		return nil, err
	case v == nil:
		return nil, fmt.Errorf("run index names run %s, which has no record", id)
	}
	if _, st := requestAndStatusOf(v); !w.f.Keeps(st) {
		return nil, nil
	}
	return decodeRun(v)
}

// queuedOutside returns the queued records of the scope that the walk
// does not meet (no entry of kind: a run not stored yet, or one that a
// queued record makes active) and that sort before bound, newest first,
// keyed by place.
func (w *acrossWalk) queuedOutside(tx *bbolt.Tx, records *bbolt.Bucket, kind byte) []placedRun {
	var out []placedRun
	for _, q := range w.queued {
		key, rec, ok := resolveQueued(tx, q)
		if !ok || !w.f.Keeps(rec.GetStatus()) {
			continue
		}
		nanos, id := runNanos(key, q.sk), q.rec.GetRunId()
		place := indexEntry(w.scope, nanos, id)
		if bytes.Compare(place, w.bound) >= 0 || w.meets(tx, records, kind, rec, nanos) {
			continue
		}
		out = append(out, placedRun{key: place, rec: rec})
	}
	slices.SortFunc(out, func(a, b placedRun) int { return bytes.Compare(b.key, a.key) })
	return out
}

// meets reports whether the walk of kind meets a run of its own: an
// active run by its entry, any run by its stored record (scan).
func (w *acrossWalk) meets(tx *bbolt.Tx, records *bbolt.Bucket, kind byte, rec *agentrunnerv1.Run, nanos int64) bool {
	if kind == indexActive {
		return exists(records, indexKey(kind, rec.GetAppName(), rec.GetUserId(), nanos, rec.GetRunId()))
	}
	_, v, err := storedRun(tx, rec.GetRunId())
	return err == nil && v != nil
}

// ofScope returns the queued records of app (and of user, when not
// empty) by run id.
func (q *runQueue) ofScope(app, user string) map[string]*runWrite {
	out := q.filter(nil)
	for id, w := range out {
		if w.rec.GetAppName() != app || (user != "" && w.rec.GetUserId() != user) {
			delete(out, id)
		}
	}
	return out
}
