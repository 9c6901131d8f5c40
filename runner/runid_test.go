package runner

import (
	"strings"
	"testing"
	"time"
)

// TestNewRunIDSortsByTime: ids of runs created in order sort in order
// (the store's run_ids index relies on it to grow at its end), across
// every millisecond boundary and byte of the time; ids of one millisecond
// differ.
func TestNewRunIDSortsByTime(t *testing.T) {
	base := time.UnixMilli(1_700_000_000_000)
	prev := newRunID(time.UnixMilli(0))
	seen := map[string]bool{}
	at := base
	for i := range 2000 {
		// Steps of 1 ms, then of powers of two up to 2^37 ms: every
		// byte of the 48-bit time changes somewhere in the sequence.
		step := time.Millisecond
		if i >= 1000 {
			step <<= (i - 1000) % 38
		}
		at = at.Add(step)
		id := newRunID(at)
		if len(id) != 28 || !strings.HasPrefix(id, "e-") {
			t.Fatalf("id %q: want e- and 26 characters", id)
		}
		if seen[id] {
			t.Fatalf("id %q made twice", id)
		}
		seen[id] = true
		if id <= prev {
			t.Fatalf("id %q of %v does not sort after %q", id, at, prev)
		}
		prev = id
	}
	a, b := newRunID(base), newRunID(base)
	if a == b || a[:11] != b[:11] { // "e-" and 9 characters: 45 of the 48 bits of time
		t.Fatalf("ids of one millisecond: %q, %q; want the same time prefix and different ids", a, b)
	}
	if later := newRunID(base.Add(time.Millisecond)); later <= a || later <= b {
		t.Fatalf("id %q of the next millisecond sorts before %q or %q", later, a, b)
	}
}

// TestFirstRecordIsStored: the record a run's stream starts with names a
// run the store has already: the stream gets it only once the record is
// stored with the user's message, so a crash after a client has seen the
// run id leaves that run for recovery, never unknown.
func TestFirstRecordIsStored(t *testing.T) {
	r, st, k := newTestRunner(t, mustAgent(t, "root", "answer"))
	first := true
	for u, err := range r.Stream(t.Context(), request(k, "hi")) {
		if err != nil {
			t.Fatal(err)
		}
		if !first || u.Run == nil {
			continue
		}
		first = false
		// The run goes on only after this returns: what the store holds
		// now is what it held when the record reached the reader.
		rec, err := st.GetRun(t.Context(), u.Run.GetRunId())
		if err != nil {
			t.Fatalf("first record %s: the store has no record (%v)", u.Run.GetRunId(), err)
		}
		if rec.GetFirstSequence() == 0 || u.Run.GetFirstSequence() != rec.GetFirstSequence() {
			t.Fatalf("first record's first_sequence %d, stored %d; want the user event's", u.Run.GetFirstSequence(), rec.GetFirstSequence())
		}
	}
	if first {
		t.Fatal("no record streamed")
	}
}
