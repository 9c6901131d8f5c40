package runner

import (
	"fmt"
	"testing"
)

// TestOneProcessStoreRunsAlone: the store decides, once, at New, what the
// runner can do with it among replicas; a bbolt file, which one process
// owns, gives it no lease and no shared queue (nil capabilities: the
// registry is the only rule), and a run on it goes through none.
func TestOneProcessStoreRunsAlone(t *testing.T) {
	r, _, k := newTestRunner(t, mustAgent(t, "root", "hello"))
	if r.replicas.Leases != nil || r.replicas.Queue != nil {
		t.Fatalf("capabilities on bbolt: leases %T, queue %T; want none", r.replicas.Leases, r.replicas.Queue)
	}
	if got := fmt.Sprintf("%T %T", r.replicas.Elsewhere, r.replicas.Recovery); got != "replica.stored replica.alone" {
		t.Fatalf("elsewhere and recovery on bbolt are %s, want replica.stored replica.alone", got)
	}
	res := mustRun(t, r, request(k, "hi"))
	if got := summary(res.events); !equalStrings(got, []string{"user: hi", "root: hello"}) && !equalStrings(got, []string{"root: hello"}) {
		t.Fatalf("events %q", got)
	}
}
