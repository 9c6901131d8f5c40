package runner

import (
	"errors"
	"strings"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// reapSlack is what the reap tests allow beyond a lease's length after a
// replica is cut off, for the survivor to see the expiry and store the
// interruption: a heartbeat period, on a loaded machine under -race.
const reapSlack = failoverTTL / 8

// TestDeadReplicaRunInterruptedWhileSessionBusy: replica a dies (cut off
// from the database) in a run; its session keeps getting runs on replica
// b, each sent as soon as the last refusal said the session would be free.
// a's run is INTERRUPTED within a lease's length of the cut, before b's
// first run on the session, with no Recover called: ListRuns never shows
// two runs RUNNING on the session once a's lease has run out. Until then
// b refuses the session with the time a's lease runs out.
func TestDeadReplicaRunInterruptedWhileSessionBusy(t *testing.T) {
	f := startFailover(t, failoverTTL)
	cut := time.Now()
	f.sa.cut.Store(true)
	ran, refused, retried := 0, 0, false
	for deadline := cut.Add(4 * failoverTTL); ran < 20 && time.Now().Before(deadline); {
		res := collect(t, f.b.Run(t.Context(), request(f.k, "busy")))
		var leased *SessionLeasedError
		switch {
		case errors.As(res.err, &leased):
			refused++
			checkRetryAt(t, leased, cut)
			if ran > 0 || retried && strings.HasPrefix(leased.Holder, f.runID+"@") {
				t.Fatalf("b's run refused after the time the last refusal gave: %v", res.err)
			}
			// Not a race to win: the wait the refusal asks for, as a
			// client would wait; the run sent then must not be refused.
			time.Sleep(time.Until(leased.RetryAt))
			retried = true
		case res.err != nil:
			t.Fatalf("run on b after a was cut: %v", res.err)
		default:
			ran++
			end := checkInterruptedBy(t, f, cut.Add(failoverTTL+reapSlack))
			if ran == 1 {
				t.Logf("a's run INTERRUPTED %v after the cut (lease %v)", end.Sub(cut), failoverTTL)
			}
		}
	}
	t.Logf("%d runs refused until a's lease ran out, %d ran on b", refused, ran)
	if refused == 0 || ran == 0 {
		t.Fatalf("%d runs refused, %d ran; want both", refused, ran)
	}
	want := []string{"hi", "before", "INTERRUPTED", "busy", "resumed"}
	if got := storedTexts(t, f.sb, f.k); len(got) < len(want) || !equalStrings(got[:len(want)], want) {
		t.Errorf("stored %q; want it to begin %q", got, want)
	}
	close(f.g.open)
	f.endOfA(t)
}

// TestDeadReplicaRunInterruptedIdleSession: a dead replica's run on a
// session that takes no run is INTERRUPTED within a lease's length of its
// replica's death, with no Recover called: every replica looks for such
// runs as their leases run out.
func TestDeadReplicaRunInterruptedIdleSession(t *testing.T) {
	f := startFailover(t, failoverTTL)
	cut := time.Now()
	f.sa.cut.Store(true)
	waitStatus(t, f.sb, f.runID, agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED)
	end := checkInterruptedBy(t, f, cut.Add(failoverTTL+reapSlack))
	t.Logf("a's run INTERRUPTED %v after the cut (lease %v)", end.Sub(cut), failoverTTL)
	want := []string{"hi", "before", "INTERRUPTED"}
	if got := storedTexts(t, f.sb, f.k); !equalStrings(got, want) {
		t.Errorf("stored %q; want %q", got, want)
	}
	close(f.g.open)
	f.endOfA(t)
}

// checkRetryAt checks the retry time of a refusal made after a was cut
// at cut: no later than a's lease's end, a lease's length after the cut.
func checkRetryAt(t *testing.T, leased *SessionLeasedError, cut time.Time) {
	t.Helper()
	if leased.RetryAt.After(cut.Add(failoverTTL+reapSlack)) || leased.RetryAt.Before(cut) {
		t.Fatalf("refused until %s, %v after the cut; want within the lease, %v", leased.RetryAt, leased.RetryAt.Sub(cut), failoverTTL)
	}
}

// checkInterruptedBy checks that a's run is INTERRUPTED, ended no later
// than by, and returns when it ended.
func checkInterruptedBy(t *testing.T, f *failover, by time.Time) time.Time {
	t.Helper()
	rec, err := f.b.GetRun(t.Context(), f.runID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED {
		t.Fatalf("a's run is %v while b runs the session; want INTERRUPTED", rec.GetStatus())
	}
	end := rec.GetEndTime().AsTime()
	if end.After(by) {
		t.Fatalf("a's run ended %v after the bound", end.Sub(by))
	}
	return end
}
