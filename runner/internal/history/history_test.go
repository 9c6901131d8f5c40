package history

import (
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

func TestHistoryCacheBound(t *testing.T) {
	h := New(0, 4)
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
	off := New(0, -1)
	off.Put(a, sess, []*agentrunnerv1.Event{ev(1)})
	if off.take(a) != nil {
		t.Fatal("a disabled cache kept an entry")
	}
}
