package agent

import "testing"

func TestVisibleIn(t *testing.T) {
	tests := []struct {
		ev, branch string
		want       bool
	}{
		{"", "a.b", true}, // events outside branches are seen everywhere
		{"a.b", "", true}, // after the parallel agent, everything is seen
		{"outer.inner", "outer.inner.inner.x", true},
		{"outer.inner.inner.x", "outer.inner.inner.y", false}, // a sibling's
		{"a.b", "a.bc", false},                                // a prefix that is not an ancestor
		{"a.b.c", "a.b", false},                               // a descendant's
	}
	for _, tc := range tests {
		if got := visibleIn(tc.ev, tc.branch); got != tc.want {
			t.Errorf("visibleIn(%q, %q) = %v, want %v", tc.ev, tc.branch, got, tc.want)
		}
	}
}
