package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// The run index lists runs across sessions (ListRunsOf without a
// session), newest first, without walking any session:
//
//	run_index  'a' T(app) N(create) T(run_id)        -> empty: every run of the app
//	           'u' T(app, user) N(create) T(run_id)  -> empty: every run of the user
//	           'A' T(app) N(create) T(run_id)        -> empty, while the run is active
//	           'U' T(app, user) N(create) T(run_id)  -> empty, while the run is active
//
// create is the stored create_time, which never changes, so a run's 'a'
// and 'u' entries are written once, with its first record. Its 'A' and
// 'U' entries (store.Active: PENDING, RUNNING, INPUT_REQUIRED) come and
// go with the writes that change its status, in their transaction
// (runPlan.index), so that the runs board reads only active runs however
// many have ended. The entries of one app or user sort by creation: a new
// run's go at the end of their scope's range, next to the newest.
//
// A page token is the 'a' or 'u' entry of the last run listed: the same
// token continues a listing of active runs or of all runs.
var bucketRunIndex = []byte("run_index")

// Kinds of run_index entries; an active kind is its scope's in upper case.
const (
	indexApp  = 'a'
	indexUser = 'u'
)

// activeKind is the kind of the active entries of a scope kind.
func activeKind(kind byte) byte { return kind - 'a' + 'A' }

// indexScope is kind T(app) for an app's runs, kind T(app, user) for a
// user's: the prefix of every entry of one listing.
func indexScope(kind byte, app, user string) []byte {
	b := appendString([]byte{kind}, app)
	if kind == indexUser || kind == activeKind(indexUser) {
		b = appendString(b, user)
	}
	return b
}

// indexEntry is scope N(create) T(run_id).
func indexEntry(scope []byte, nanos int64, runID string) []byte {
	b := make([]byte, 0, len(scope)+8+len(runID)+2)
	return appendString(appendUint64(append(b, scope...), uint64(nanos)^1<<63), runID)
}

// runIndexKeys are the entries of a run in its app's and its user's
// ranges: the active ones when active.
func runIndexKeys(active bool, app, user string, nanos int64, runID string) [][]byte {
	a, u := byte(indexApp), byte(indexUser)
	if active {
		a, u = activeKind(a), activeKind(u)
	}
	return [][]byte{
		indexEntry(indexScope(a, app, ""), nanos, runID),
		indexEntry(indexScope(u, app, user), nanos, runID),
	}
}

// index keeps the run index for the planned write: a new run's entries,
// and its active entries when its status enters or leaves the active
// ones. It fails only with an abortError.
func (p *runPlan) index(tx *bbolt.Tx) error {
	if !p.newRun && p.active == 0 {
		return nil
	}
	b := tx.Bucket(bucketRunIndex)
	app, user, id := p.w.rec.GetAppName(), p.w.rec.GetUserId(), p.w.rec.GetRunId()
	nanos := runNanos(p.key, p.w.sk)
	var keys [][]byte
	if p.newRun {
		keys = runIndexKeys(false, app, user, nanos, id)
	}
	if p.active == 1 {
		keys = append(keys, runIndexKeys(true, app, user, nanos, id)...)
	}
	for _, k := range keys {
		if err := put(b, k, []byte{}); err != nil {
			return err
		}
	}
	if p.active == -1 {
		for _, k := range runIndexKeys(true, app, user, nanos, id) {
			if err := del(b, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// entryNanos returns the create time of a run_index entry whose scope is
// n bytes long.
func entryNanos(key []byte, n int) int64 {
	return int64(binary.BigEndian.Uint64(key[n:]) ^ 1<<63)
}

// sessionIndexKeys are every run_index entry of the run whose key in
// session sk's list is key, active or not: what DeleteSession deletes.
func sessionIndexKeys(sk, key []byte, runID string) ([][]byte, error) {
	app, rest, err := readString(sk)
	if err != nil {
		return nil, err
	}
	user, _, err := readString(rest)
	if err != nil {
		return nil, err
	}
	nanos := runNanos(key, sk)
	return append(runIndexKeys(false, app, user, nanos, runID), runIndexKeys(true, app, user, nanos, runID)...), nil
}

// migrateRunIndex (schema 6 -> 7) builds the run index from run_records:
// every run's entries, and the active entries of the active ones.
func migrateRunIndex(tx *bbolt.Tx) error {
	idx, err := tx.CreateBucketIfNotExists(bucketRunIndex)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketRunIndex, err)
	}
	c := tx.Bucket(bucketRunRecords).Cursor()
	for k, _ := c.Seek([]byte{'r'}); k != nil && k[0] == 'r'; k, _ = c.Next() {
		runID, _, err := readString(k[1:])
		if err != nil {
			return fmt.Errorf("run_records key %x: %w", k, err)
		}
		key, v, err := storedRun(tx, runID)
		if err != nil {
			return err
		}
		app, rest, err := readString(key)
		if err != nil {
			return fmt.Errorf("run %s: run key: %w", runID, err)
		}
		user, rest, err := readString(rest)
		if err == nil {
			_, rest, err = readString(rest)
		}
		if err != nil {
			return fmt.Errorf("run %s: run key: %w", runID, err)
		}
		nanos := runNanos(key, key[:len(key)-len(rest)])
		_, st := requestAndStatusOf(v)
		keys := runIndexKeys(false, app, user, nanos, runID)
		if store.Active(st) {
			keys = append(keys, runIndexKeys(true, app, user, nanos, runID)...)
		}
		for _, k := range keys {
			if err := idx.Put(k, []byte{}); err != nil {
				return err
			}
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
	kind := byte(indexUser)
	if f.User == "" {
		kind = indexApp
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

// acrossWalk is one page of a listing across sessions: a backward walk of
// the scope's entries (the active ones when the filter keeps only active
// runs) from bound, with the records PutRunLater queued overlaid.
type acrossWalk struct {
	f      store.RunFilter
	scope  []byte // kind 'a' or 'u': the form of bound and of the token
	bound  []byte
	queued map[string]*runWrite
}

// walkKind is the kind of the entries the walk reads.
func (w *acrossWalk) walkKind() byte {
	if w.f.OnlyActive() {
		return activeKind(w.scope[0])
	}
	return w.scope[0]
}

// withKind returns key (of scope form) with another kind byte.
func withKind(kind byte, key []byte) []byte {
	out := bytes.Clone(key)
	out[0] = kind
	return out
}

// list returns up to limit runs and the token of the next page. Entries
// from the index and queued records with none there merge by key, the
// kind byte aside.
func (w *acrossWalk) list(tx *bbolt.Tx, limit int) ([]*agentrunnerv1.Run, string, error) {
	b := tx.Bucket(bucketRunIndex)
	kind := w.walkKind()
	prefix := withKind(kind, w.scope)
	extra := w.queuedOutside(tx, b, kind)
	c := b.Cursor()
	key, _ := seekBefore(c, withKind(kind, w.bound))
	var (
		out  []*agentrunnerv1.Run
		last []byte
	)
	for {
		indexed := key != nil && bytes.HasPrefix(key, prefix)
		var (
			rec   *agentrunnerv1.Run
			place []byte
			err   error
		)
		switch {
		case !indexed && len(extra) == 0:
			return out, "", nil
		case len(extra) > 0 && (!indexed || bytes.Compare(extra[0].key[1:], key[1:]) > 0):
			rec, place, extra = proto.CloneOf(extra[0].rec), extra[0].key, extra[1:]
		default:
			place = withKind(w.scope[0], key)
			rec, err = w.entryRun(tx, key)
			key, _ = c.Prev()
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

// entryRun returns the record of the run an entry names, its queued one
// when there is one; nil when the filter does not keep its stored status
// (read without decoding the record).
func (w *acrossWalk) entryRun(tx *bbolt.Tx, key []byte) (*agentrunnerv1.Run, error) {
	id, _, err := readString(key[len(w.scope)+8:])
	if err != nil {
		return nil, fmt.Errorf("run_index entry %x: %w", key, err)
	}
	if q := w.queued[id]; q != nil {
		rec := proto.CloneOf(q.rec)
		if nanos := entryNanos(key, len(w.scope)); nanos != q.nanos {
			rec.CreateTime = timestamppb.New(time.Unix(0, nanos))
		}
		return rec, nil
	}
	_, v, err := storedRun(tx, id)
	switch {
	case err != nil:
		return nil, err
	case v == nil:
		return nil, fmt.Errorf("run_index names run %s, which has no record", id)
	}
	if _, st := requestAndStatusOf(v); !w.f.Keeps(st) {
		return nil, nil
	}
	return decodeRun(v)
}

// queuedOutside returns the queued records of the scope that the walk
// does not meet (no entry of kind: a run not stored yet, or one that a
// queued record makes active) and that sort before bound, newest first,
// keyed in the scope's form.
func (w *acrossWalk) queuedOutside(tx *bbolt.Tx, b *bbolt.Bucket, kind byte) []placedRun {
	var out []placedRun
	for _, q := range w.queued {
		key, rec, ok := resolveQueued(tx, q)
		if !ok || !w.f.Keeps(rec.GetStatus()) {
			continue
		}
		entry := indexEntry(w.scope, runNanos(key, q.sk), q.rec.GetRunId())
		if bytes.Compare(entry, w.bound) >= 0 || exists(b, withKind(kind, entry)) {
			continue
		}
		out = append(out, placedRun{key: entry, rec: rec})
	}
	slices.SortFunc(out, func(a, b placedRun) int { return bytes.Compare(b.key, a.key) })
	return out
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
