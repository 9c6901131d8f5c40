package runner

import (
	"fmt"
	"testing"
)

// TestOneProcessStoreRunsAlone: the store decides, once, at New, how the
// runner shares it; a bbolt file, which one process owns, gets the mode
// that does nothing (replica.alone, whose own test shows a run's steps
// through it touch nothing), and a run on it goes through that mode only.
func TestOneProcessStoreRunsAlone(t *testing.T) {
	r, _, k := newTestRunner(t, mustAgent(t, "root", "hello"))
	if got := fmt.Sprintf("%T", r.mode); got != "*replica.alone" {
		t.Fatalf("mode on bbolt is %s, want *replica.alone", got)
	}
	res := mustRun(t, r, request(k, "hi"))
	if got := summary(res.events); !equalStrings(got, []string{"user: hi", "root: hello"}) && !equalStrings(got, []string{"root: hello"}) {
		t.Fatalf("events %q", got)
	}
}
