package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// killLease is the lease of the replicas startKillReplicas starts.
const killLease = 2 * time.Second

// leaseSlack is what TestKilledReplicaRunsEndWithinLease allows beyond a
// lease's length after the kill, for a survivor to see the lease run out
// and store the interruption on a loaded machine.
const leaseSlack = 250 * time.Millisecond

// leaseKill is the state of TestKilledReplicaRunsEndWithinLease.
type leaseKill struct {
	t        *testing.T
	h        *killHarness
	killedAt time.Time // zero until the kill

	mu       sync.Mutex
	onVictim map[string]bool      // runs the victim started
	inflight int                  // of them, streams not ended yet
	seen     map[string]time.Time // victim's runs: last seen RUNNING after the kill
	ended    int                  // runs that ended, anywhere
	refused  int                  // runs refused because of a lease
}

// TestKilledReplicaRunsEndWithinLease is issue 45's item 7 through the
// API: three replicas on one PostgreSQL with 2 s leases, 48 sessions each
// sending runs back to back to random replicas, one replica killed with
// SIGKILL while runs are in flight on it, and the sessions going on
// (on the survivors) for three leases after the kill. Every run the dead
// replica left RUNNING is INTERRUPTED within a lease's length of the kill
// (its record's end, and ListRuns polled meanwhile), though its session
// keeps getting runs; a run refused because the dead replica still held
// its session is ABORTED with a RetryInfo and a message naming the time,
// and a run sent after that delay is not refused for that lease again.
func TestKilledReplicaRunsEndWithinLease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	lk := &leaseKill{t: t, h: startKillReplicas(t, rand.New(rand.NewPCG(seed, 0))),
		onVictim: map[string]bool{}, seen: map[string]time.Time{}}
	const sessions = 48
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range sessions {
		id := fmt.Sprintf("s%d", i)
		createSession(t, lk.h.replicas[i%3].sc, "slow", id)
		rng := rand.New(rand.NewPCG(seed, uint64(i)+1))
		wg.Go(func() { lk.session(id, rng, stop) })
	}
	inflight := lk.waitInflight(8, 30*time.Second)
	lk.kill()
	t.Logf("killed %s with %d runs in flight on it", lk.h.victim.name, inflight)
	lk.watch(3 * killLease)
	close(stop)
	wg.Wait()
	if t.Failed() {
		lk.h.dumpLogs()
		return
	}
	lk.check()
}

// waitInflight waits, boundedly, until n runs are in flight on the victim
// and some have ended everywhere, and returns how many are in flight.
func (lk *leaseKill) waitInflight(n int, bound time.Duration) int {
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		lk.mu.Lock()
		inflight, ended := lk.inflight, lk.ended
		lk.mu.Unlock()
		if inflight >= n && ended >= 48 {
			return inflight
		}
	}
	lk.t.Fatalf("never %d runs in flight on the victim in %v", n, bound)
	return 0
}

// kill kills the victim with SIGKILL and waits for it to exit.
func (lk *leaseKill) kill() {
	v := lk.h.victim
	lk.mu.Lock()
	v.killed.Store(true)
	lk.killedAt = time.Now()
	lk.mu.Unlock()
	if err := v.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		lk.t.Fatal(err)
	}
	<-v.p.exited
}

// watch polls ListRuns on a survivor for d after the kill, noting when
// each of the victim's runs was last seen RUNNING.
func (lk *leaseKill) watch(d time.Duration) {
	rep := lk.h.replicas[0]
	if rep.killed.Load() {
		rep = lk.h.replicas[1]
	}
	req := &servicev1.ListRunsRequest{AppName: "slow", UserId: "u", PageSize: 1000,
		Statuses: []agentrunnerv1.RunStatus{agentrunnerv1.RunStatus_RUN_STATUS_RUNNING}}
	for end := lk.killedAt.Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		resp, err := rep.rc.ListRuns(context.Background(), req)
		if err != nil {
			lk.t.Errorf("ListRuns: %v", err)
			return
		}
		now := time.Now()
		lk.mu.Lock()
		for _, r := range resp.GetRuns() {
			if lk.onVictim[r.GetRunId()] {
				lk.seen[r.GetRunId()] = now
			}
		}
		lk.mu.Unlock()
	}
}

// session sends runs on session id to random live replicas until stop.
// A run refused because of a lease is sent again after the delay the
// refusal gives.
func (lk *leaseKill) session(id string, rng *rand.Rand, stop <-chan struct{}) {
	waited := false // the last run was refused, and the delay it gave is over
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		rep := lk.h.live(rng)
		req := &servicev1.RunRequest{AppName: "slow", UserId: "u", SessionId: id,
			NewMessage: userText(fmt.Sprintf("%s message %d", id, n)), RequestId: fmt.Sprintf("%s-%d", id, n)}
		err := lk.run(rep, req)
		switch {
		case err == nil, rep.killed.Load():
			waited = false
		case status.Code(err) == codes.Aborted:
			delay, ok := lk.refusal(id, err, waited)
			if !ok {
				return
			}
			// Not a race to win: the wait the refusal asks for, as a
			// client would wait; the run sent then must not be refused
			// for the dead replica's lease.
			time.Sleep(delay)
			waited = true
		default:
			lk.t.Errorf("%s: run on %s: %v", id, rep.name, err)
			return
		}
	}
}

// run sends req to rep and reads its stream to the end.
func (lk *leaseKill) run(rep *replica, req *servicev1.RunRequest) error {
	stream, err := rep.rc.Run(context.Background(), req)
	if err != nil {
		return err
	}
	started := false
	defer func() {
		lk.mu.Lock()
		defer lk.mu.Unlock()
		if started {
			lk.ended++
			if rep == lk.h.victim {
				lk.inflight--
			}
		}
	}()
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if r := resp.GetRun(); r != nil && !started {
			started = true
			lk.mu.Lock()
			if rep == lk.h.victim {
				lk.onVictim[r.GetRunId()] = true
				lk.inflight++
			}
			lk.mu.Unlock()
		}
	}
}

// refusal checks a run refused ABORTED because of a lease: only after the
// kill, naming the dead replica's run (or a survivor's recovery of it) as
// the session's holder, with an ErrorInfo and a RetryInfo whose delay
// ends with the lease, a lease's length after the kill at most, and the
// message naming that time. waited: the run was sent after the delay a
// refusal gave, when the dead replica's lease had run out. It returns the
// delay.
func (lk *leaseKill) refusal(id string, err error, waited bool) (time.Duration, bool) {
	t := lk.t
	st := status.Convert(err)
	var info *errdetails.ErrorInfo
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			info = d
		case *errdetails.RetryInfo:
			retry = d
		}
	}
	victim := "@" + lk.h.victim.name
	switch {
	case !lk.h.victim.killed.Load():
		t.Errorf("%s: a run was refused before any replica died: %v", id, err)
	case info == nil || retry == nil || info.GetReason() != "SESSION_LEASED":
		t.Errorf("%s: refused %v with details %v; want an ErrorInfo SESSION_LEASED and a RetryInfo", id, err, st.Details())
	case !strings.Contains(st.Message(), info.GetMetadata()["retry_at"][:19]):
		t.Errorf("%s: refused with %q; want the message to name the time to retry, %s", id, st.Message(), info.GetMetadata()["retry_at"])
	case waited && strings.HasSuffix(info.GetMetadata()["holder"], victim):
		t.Errorf("%s: refused again for the dead replica's lease after the delay the last refusal gave: %v", id, err)
	case !strings.HasSuffix(info.GetMetadata()["holder"], victim) && !strings.HasPrefix(info.GetMetadata()["holder"], "recover@"):
		t.Errorf("%s: refused with %q; want it to name the dead replica %s as the session's holder", id, st.Message(), lk.h.victim.name)
	default:
		delay := retry.GetRetryDelay().AsDuration()
		lk.mu.Lock()
		lk.refused++
		late := time.Now().Add(delay).Sub(lk.killedAt)
		lk.mu.Unlock()
		if late > killLease+leaseSlack || delay < 0 {
			t.Errorf("%s: refused with a retry delay of %v, %v after the kill; want the lease's end, within %v of the kill", id, delay, late, killLease)
		}
		return delay, true
	}
	return 0, false
}

// check checks that every run the victim started and left RUNNING is
// INTERRUPTED, ended (by its record, and as ListRuns saw it) within a
// lease's length of the kill.
func (lk *leaseKill) check() {
	t := lk.t
	rep := lk.h.replicas[0]
	if rep.killed.Load() {
		rep = lk.h.replicas[1]
	}
	var cut int
	var longest, longestSeen time.Duration
	for id := range lk.onVictim {
		rec, err := rep.rc.GetRun(context.Background(), &servicev1.GetRunRequest{RunId: id})
		if err != nil {
			t.Errorf("GetRun(%s): %v", id, err)
			continue
		}
		r := rec.GetRun()
		switch r.GetStatus() {
		case agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED:
			continue
		case agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED:
		default:
			t.Errorf("run %s of the dead replica is %v; want INTERRUPTED or SUCCEEDED", id, r.GetStatus())
			continue
		}
		cut++
		longest = max(longest, r.GetEndTime().AsTime().Sub(lk.killedAt))
		if seen, ok := lk.seen[id]; ok {
			longestSeen = max(longestSeen, seen.Sub(lk.killedAt))
		}
	}
	t.Logf("%d runs ran on the dead replica, %d cut by the kill; %d runs ended in all, %d refused because of a lease", len(lk.onVictim), cut, lk.ended, lk.refused)
	t.Logf("longest RUNNING after the kill: %v by the records' end, last seen RUNNING by ListRuns %v after it; the lease is %v", longest, longestSeen, killLease)
	if cut == 0 {
		t.Errorf("the kill cut no run off; nothing was checked")
	}
	if longest > killLease+leaseSlack || longestSeen > killLease+leaseSlack {
		t.Errorf("a run of the dead replica stayed RUNNING %v (by its record; %v by ListRuns) after the kill; want within the lease, %v", longest, longestSeen, killLease)
	}
}
