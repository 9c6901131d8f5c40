package runner

import (
	"strings"
	"testing"
)

// TestPartialEventIDs checks the ids of streamed partial events: every
// event of a session's runs, partial or complete, has its own, and a
// run's partials share its prefix (an id from the generator) and differ
// by their count.
func TestPartialEventIDs(t *testing.T) {
	const n = 5
	r, _, k := newTestRunner(t, streamer(t, n))
	seen := map[string]bool{}
	prefixes := map[string]bool{}
	for range 2 {
		res := mustRun(t, r, request(k, "go"))
		if len(res.events) != n+1 {
			t.Fatalf("%d events, want %d", len(res.events), n+1)
		}
		prefix := ""
		for i, ev := range res.events {
			id := ev.GetId()
			if id == "" || seen[id] {
				t.Fatalf("event %d: id %q empty or seen before", i, id)
			}
			seen[id] = true
			if !ev.GetPartial() {
				continue
			}
			p, _, ok := strings.Cut(id, ".")
			if !ok || (prefix != "" && p != prefix) {
				t.Errorf("partial %d: id %q, want the run's prefix %q and a count", i, id, prefix)
			}
			prefix = p
		}
		if prefixes[prefix] {
			t.Errorf("two runs' partials share the prefix %q", prefix)
		}
		prefixes[prefix] = true
	}
}
