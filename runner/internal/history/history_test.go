package history

import (
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

func TestHistoryCacheBound(t *testing.T) {
	h := New(0, 4, 0)
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
	off := New(0, -1, 0)
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
	h := New(0, 1000, bound)
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
