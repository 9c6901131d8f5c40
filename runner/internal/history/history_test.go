package history

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

func TestHistoryCacheBound(t *testing.T) {
	h := New(1000, 4, 64<<20)
	ev := func(seq uint64) *agentrunnerv1.Event { return &agentrunnerv1.Event{Sequence: seq} }
	sess := &agentrunnerv1.Session{}
	a, b := store.SessionKey{App: "a", User: "u", Session: "1"}, store.SessionKey{App: "a", User: "u", Session: "2"}
	h.Put(a, sess, []*agentrunnerv1.Event{ev(1), ev(2), ev(3)})
	h.Put(b, sess, []*agentrunnerv1.Event{ev(1), ev(2)})
	if h.total > 4 || h.take(a) != nil {
		t.Fatalf("total %d; the least recently used entry should have been evicted", h.total)
	}
	if e := h.take(b); e == nil || e.created.GetLastSequence() != 2 {
		t.Fatalf("entry b = %v", e)
	}
	h.Put(a, sess, []*agentrunnerv1.Event{ev(1), ev(2), ev(3), ev(4), ev(5)})
	if h.take(a) != nil {
		t.Fatal("an entry larger than the whole cache was kept")
	}
	off := New(1000, -1, 64<<20)
	off.Put(a, sess, []*agentrunnerv1.Event{ev(1)})
	if off.take(a) != nil {
		t.Fatal("a disabled cache kept an entry")
	}
}

// TestHistoryCacheBytes: the cache keeps at most its byte bound of
// encoded events, evicting the least recently used sessions, and never
// keeps a session larger than the whole bound: a few sessions of large
// events cannot fill the heap.
func TestHistoryCacheBytes(t *testing.T) {
	const bound = 10_000
	h := New(1000, 1000, bound)
	big := func(seq uint64) *agentrunnerv1.Event {
		return &agentrunnerv1.Event{Sequence: seq, Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: strings.Repeat("x", 3000)}}}}}
	}
	sess := &agentrunnerv1.Session{}
	k := func(i int) store.SessionKey {
		return store.SessionKey{App: "a", User: "u", Session: string(rune('a' + i))}
	}
	for i := range 5 {
		h.Put(k(i), sess, []*agentrunnerv1.Event{big(1), big(2)}) // about 6 KB each
		if h.bytes > bound {
			t.Fatalf("after %d sessions the cache holds %d bytes, over its bound %d", i+1, h.bytes, bound)
		}
	}
	if h.take(k(4)) == nil || h.take(k(3)) != nil {
		t.Fatal("the newest session should be kept and the older ones evicted")
	}
	if h.bytes != 0 || h.total != 0 {
		t.Fatalf("empty cache counts %d bytes, %d events", h.bytes, h.total)
	}
	h.Put(k(0), sess, []*agentrunnerv1.Event{big(1), big(2), big(3), big(4)})
	if h.take(k(0)) != nil {
		t.Fatal("a session larger than the whole bound was kept")
	}
}

// memLoader is a session's stored events in memory.
type memLoader struct{ events []*agentrunnerv1.Event }

func (m *memLoader) GetSession(_ context.Context, _ store.SessionKey, opts store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error) {
	var out []*agentrunnerv1.Event
	for _, ev := range m.events {
		if ev.GetSequence() > opts.AfterSequence {
			out = append(out, proto.CloneOf(ev))
		}
	}
	if n := opts.NumRecentEvents; n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return &agentrunnerv1.Session{LastSequence: uint64(len(m.events))}, out, nil
}

func (m *memLoader) add(texts ...string) []*agentrunnerv1.Event {
	var added []*agentrunnerv1.Event
	for _, s := range texts {
		ev := &agentrunnerv1.Event{Sequence: uint64(len(m.events) + 1), Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}}
		m.events = append(m.events, ev)
		added = append(added, proto.CloneOf(ev))
	}
	return added
}

// TestPutCountsWhatTheRunAdded: across runs, a Put that is given back the
// history Load lent, with the run's events appended, accounts for exactly
// the bytes of the whole history, as a full pass would; a run whose
// events are not the lent history's continuation is accounted in full,
// and a gap right after the lent history is still refused.
func TestPutCountsWhatTheRunAdded(t *testing.T) {
	h := New(1000, 1000, 64<<20)
	st := &memLoader{}
	k := store.SessionKey{App: "a", User: "u", Session: "s"}
	st.add("hello", "hi there")
	for run := range 5 {
		sess, events, err := h.Load(t.Context(), st, k)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, st.add(strings.Repeat("q", run*10), strings.Repeat("answer ", run))...)
		sess.LastSequence = uint64(len(st.events))
		h.Put(k, sess, events)
		if want := sizes(events); h.bytes != want || h.total != len(events) {
			t.Fatalf("run %d: cache counts %d bytes, %d events; want %d and %d", run, h.bytes, h.total, want, len(events))
		}
	}
	// Not the lent history (a different start): sized in full.
	other := []*agentrunnerv1.Event{proto.CloneOf(st.events[3]), proto.CloneOf(st.events[4])}
	h.Put(k, &agentrunnerv1.Session{LastSequence: 5}, other)
	if h.bytes != sizes(other) {
		t.Fatalf("cache counts %d bytes for a foreign history, want %d", h.bytes, sizes(other))
	}
	// A gap right where the run's events start: not kept.
	_, events, err := h.Load(t.Context(), st, k)
	if err != nil {
		t.Fatal(err)
	}
	st.add("appended by someone else")
	events = append(events, st.add("the run's answer")...)
	h.Put(k, &agentrunnerv1.Session{LastSequence: uint64(len(st.events))}, events)
	if h.take(k) != nil {
		t.Fatal("a history with a gap after the lent events was kept")
	}
}
