package agent

import (
	"fmt"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

func TestWithoutRewound(t *testing.T) {
	ev := func(seq uint64, inv, rewind string) *agentrunnerv1.Event {
		e := &agentrunnerv1.Event{Sequence: seq, InvocationId: inv}
		if rewind != "" {
			e.Actions = &agentrunnerv1.EventActions{RewindBeforeInvocationId: rewind}
		}
		return e
	}
	seqs := func(evs []*agentrunnerv1.Event) string {
		var out []uint64
		for _, e := range evs {
			out = append(out, e.GetSequence())
		}
		return fmt.Sprint(out)
	}
	for _, tc := range []struct {
		name   string
		events []*agentrunnerv1.Event
		want   string
	}{
		{"no rewind", []*agentrunnerv1.Event{ev(1, "a", ""), ev(2, "b", "")}, "[1 2]"},
		{"one", []*agentrunnerv1.Event{ev(1, "a", ""), ev(2, "b", ""), ev(3, "b", ""), ev(4, "r", "b"), ev(5, "c", "")}, "[1 5]"},
		{"to the start", []*agentrunnerv1.Event{ev(1, "a", ""), ev(2, "b", ""), ev(3, "r", "a"), ev(4, "c", "")}, "[4]"},
		// A rewind of a rewind's own run: the later one reaches further.
		{"nested", []*agentrunnerv1.Event{ev(1, "a", ""), ev(2, "b", ""), ev(3, "r1", "b"), ev(4, "c", ""), ev(5, "r2", "a")}, "[]"},
		{"two in turn", []*agentrunnerv1.Event{ev(1, "a", ""), ev(2, "b", ""), ev(3, "r1", "b"), ev(4, "c", ""), ev(5, "r2", "c"), ev(6, "d", "")}, "[1 6]"},
		// The invocation began before the loaded window: all before goes.
		{"before the window", []*agentrunnerv1.Event{ev(7, "x", ""), ev(8, "r", "w"), ev(9, "y", "")}, "[9]"},
	} {
		if got := seqs(WithoutRewound(tc.events)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
