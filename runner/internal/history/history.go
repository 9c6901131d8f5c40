// Package history is the runner's cache of recent session history between
// runs (see Cache). It is internal to the runner.
//
// Imports: store and the generated messages. It must not import the
// runner or any agent package (runner/deps_test.go checks).
package history

import (
	"container/list"
	"context"
	"sync"

	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Cache keeps the recent events of recently active sessions between
// runs, so that a run reads from the store only what was appended since
// the previous run of its session, not the whole history: the cost of a
// run does not grow with the session's length.
//
// An entry is trusted only while the stored session still matches it: the
// same create time (a deleted and recreated session is a different one)
// and a last sequence at least as high as the entry's. Events appended in
// the meantime, through AppendEvent or another server, are read after the
// entry's last sequence. The runner serializes the runs of one session, so an
// entry is never used by two runs at once.
type Cache struct {
	window   int // recent events a cold load reads first; <0 = all
	limit    int // events kept over all sessions
	maxBytes int // encoded bytes of the events kept over all sessions

	mu      sync.Mutex
	total   int
	bytes   int
	order   *list.List // of *historyEntry, most recently used first
	entries map[store.SessionKey]*list.Element
	// lent describes the history Load last returned for a session, so
	// that Put, given it back with the run's events appended, sizes and
	// checks only what the run added: a run's cost must not grow with
	// its session's length.
	lent map[store.SessionKey]view
}

// view is a history Load returned: the sequences of its first and last
// events, how many there are, and their encoded size.
type view struct {
	first, last uint64
	n, bytes    int
}

// maxLent bounds the views kept for runs that never called Put (a failed
// run); past it they are forgotten, which costs the next Put of those
// sessions one full pass.
const maxLent = 100_000

type historyEntry struct {
	key     store.SessionKey
	created *agentrunnerv1.Session // create_time and last_sequence of the session when stored
	events  []*agentrunnerv1.Event
	bytes   int // the events' encoded size
}

// Loader is the storage a Cache reads. Implemented by *boltstore.Store.
type Loader interface {
	GetSession(ctx context.Context, k store.SessionKey, opts store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error)
}

// New returns a cache whose cold loads read window recent events first
// (negative: all at once; they read more when those do not reach back
// to the newest compaction) and that keeps at most limit events over all
// sessions, of at most maxBytes encoded bytes (negative: no cache). The
// runner decides the defaults (runner.DefaultHistoryEvents and the
// like): a zero here is a zero.
func New(window, limit, maxBytes int) *Cache {
	return &Cache{window: window, limit: limit, maxBytes: maxBytes, order: list.New(),
		entries: map[store.SessionKey]*list.Element{}, lent: map[store.SessionKey]view{}}
}

// sizeOf is an event's encoded size. The events a run holds were encoded
// by the store or are decoded from it, and never change afterwards: the
// size protobuf cached then is reused, so that a Put costs nothing per
// event it has seen before.
func sizeOf(ev *agentrunnerv1.Event) int {
	return proto.MarshalOptions{UseCachedSize: true}.Size(ev)
}

// Load returns the session with its state and the events its agents
// see, oldest first: every event after the range of the session's newest
// compaction (that compaction's event among them), or every event when
// nothing was compacted. A history is never cut: when the window's recent
// events do not reach back that far, the rest is read too.
func (h *Cache) Load(ctx context.Context, st Loader, k store.SessionKey) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error) {
	opts := store.GetOptions{}
	if h.window > 0 {
		opts.NumRecentEvents = h.window
	}
	if e := h.take(k); e != nil {
		sess, events, ok, err := h.extend(ctx, st, k, e, opts)
		if err != nil || ok {
			return sess, events, err
		}
		// A different session under the same key: read it afresh.
	}
	sess, events, err := h.load(ctx, st, k, opts)
	if err == nil {
		h.lend(k, events, sizes(events))
	}
	return sess, events, err
}

// load reads the history from the store.
func (h *Cache) load(ctx context.Context, st Loader, k store.SessionKey, opts store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error) {
	sess, events, err := st.GetSession(ctx, k, opts)
	if err != nil {
		return nil, nil, err
	}
	if len(events) > 0 && events[0].GetSequence() > sess.GetCompactedSequence()+1 {
		// The window ends short of the newest compaction (or of the
		// session's start): read everything the agents must see.
		if sess, events, err = st.GetSession(ctx, k, store.GetOptions{AfterSequence: sess.GetCompactedSequence()}); err != nil {
			return nil, nil, err
		}
	}
	return sess, trim(events), nil
}

// extend reads what was appended after the cached entry e; ok is false
// when the stored session is no longer the one e was taken from.
func (h *Cache) extend(ctx context.Context, st Loader, k store.SessionKey, e *historyEntry, opts store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, bool, error) {
	opts.AfterSequence = e.created.GetLastSequence()
	opts.NumRecentEvents = 0 // everything since: the entry ends where they start
	sess, fresh, err := st.GetSession(ctx, k, opts)
	if err != nil {
		return nil, nil, false, err
	}
	if !proto.Equal(sess.GetCreateTime(), e.created.GetCreateTime()) || sess.GetLastSequence() < e.created.GetLastSequence() {
		return nil, nil, false, nil
	}
	// In place: take removed the entry, so this run owns its array (the
	// run that stored it has ended). The entry's events were trimmed
	// when stored: only a compaction among the new ones can cut more.
	events := append(e.events, fresh...)
	size := e.bytes + sizes(fresh)
	if newestCompaction(fresh) > 0 {
		events = trim(events)
		size = sizes(events)
	}
	h.lend(k, events, size)
	return sess, events, true, nil
}

// lend records the history Load returns for k.
func (h *Cache) lend(k store.SessionKey, events []*agentrunnerv1.Event, size int) {
	v := view{n: len(events), bytes: size}
	if v.n > 0 {
		v.first, v.last = events[0].GetSequence(), events[v.n-1].GetSequence()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.lent) >= maxLent {
		clear(h.lent)
	}
	h.lent[k] = v
}

// known returns how many of events, from the start, are the history Load
// lent for k, and their size; 0 when they are not.
func (h *Cache) known(k store.SessionKey, events []*agentrunnerv1.Event) (n, size int) {
	h.mu.Lock()
	v, ok := h.lent[k]
	delete(h.lent, k)
	h.mu.Unlock()
	if !ok || v.n == 0 || len(events) < v.n || events[0].GetSequence() != v.first || events[v.n-1].GetSequence() != v.last {
		return 0, 0
	}
	return v.n, v.bytes
}

func sizes(events []*agentrunnerv1.Event) int {
	n := 0
	for _, ev := range events {
		n += sizeOf(ev)
	}
	return n
}

// newestCompaction returns the end of the range of the newest compaction
// among events, 0 when there is none.
func newestCompaction(events []*agentrunnerv1.Event) uint64 {
	for i := len(events) - 1; i >= 0; i-- {
		if c := events[i].GetActions().GetCompaction(); c != nil {
			return c.GetEndSequence()
		}
	}
	return 0
}

// trim drops the events the newest compaction among events covers: its
// summary stands for them.
func trim(events []*agentrunnerv1.Event) []*agentrunnerv1.Event {
	end := newestCompaction(events)
	if end == 0 || len(events) == 0 || events[0].GetSequence() > end {
		return events
	}
	i := 0
	for i < len(events) && events[i].GetSequence() <= end {
		i++
	}
	return events[i:]
}

// take removes and returns the entry of k, if any.
func (h *Cache) take(k store.SessionKey) *historyEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	el, ok := h.entries[k]
	if !ok {
		return nil
	}
	e := el.Value.(*historyEntry)
	h.order.Remove(el)
	delete(h.entries, k)
	h.total -= len(e.events)
	h.bytes -= e.bytes
	return e
}

// Put records the events of k after a run. events must all be stored;
// sess gives the session's create time.
//
// What the run added to the history Load lent it is all Put looks at: the
// lent events were sized, trimmed and checked when loaded.
func (h *Cache) Put(k store.SessionKey, sess *agentrunnerv1.Session, events []*agentrunnerv1.Event) {
	from, size := h.known(k, events)
	if newestCompaction(events[from:]) > 0 {
		events, from, size = trim(events), 0, 0
	}
	if len(events) > h.limit || h.maxBytes < 0 {
		return
	}
	size += sizes(events[from:])
	if size > h.maxBytes {
		return
	}
	last := sess.GetLastSequence()
	if len(events) > 0 {
		last = events[len(events)-1].GetSequence()
	}
	for i := max(from, 1); i < len(events); i++ {
		// An event appended by someone else during the run (AppendEvent
		// on a running session) is not in the view: a gap. Keeping the
		// view would hide that event from later runs, so drop it.
		if events[i].GetSequence() != events[i-1].GetSequence()+1 {
			return
		}
	}
	e := &historyEntry{
		key:     k,
		created: &agentrunnerv1.Session{CreateTime: sess.GetCreateTime(), LastSequence: last},
		events:  events,
		bytes:   size,
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.entries[k]; ok {
		h.total -= len(el.Value.(*historyEntry).events)
		h.bytes -= el.Value.(*historyEntry).bytes
		h.order.Remove(el)
	}
	h.entries[k] = h.order.PushFront(e)
	h.total += len(events)
	h.bytes += size
	for h.total > h.limit || h.bytes > h.maxBytes {
		el := h.order.Back()
		old := el.Value.(*historyEntry)
		h.order.Remove(el)
		delete(h.entries, old.key)
		h.total -= len(old.events)
		h.bytes -= old.bytes
	}
}
