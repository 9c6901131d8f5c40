package runner

import (
	"sync"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// countingGate is a ClaimGate with room for a set number of claims; it
// counts what it refused and keeps what its claims were bound to.
type countingGate struct {
	mu       sync.Mutex
	room     int
	refused  int
	bound    []<-chan struct{}
	released int
}

func (g *countingGate) TryClaim() (Claim, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.room <= 0 {
		g.refused++
		return nil, false
	}
	g.room--
	return countingClaim{g}, true
}

func (g *countingGate) Reserve() Claim {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.room--
	return countingClaim{g}
}

func (g *countingGate) setRoom(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.room = n
}

// counts returns what the gate refused, bound and got back.
func (g *countingGate) counts() (refused int, bound []<-chan struct{}, released int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused, append([]<-chan struct{}(nil), g.bound...), g.released
}

type countingClaim struct{ g *countingGate }

func (c countingClaim) Bind(done <-chan struct{}) {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	c.g.bound = append(c.g.bound, done)
}

func (c countingClaim) Release() {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	c.g.released++
	c.g.room++
}

// waitRefused waits until g has refused at least n claims.
func waitRefused(t *testing.T, g *countingGate, name string, n int) {
	t.Helper()
	until(t, "replica "+name+"'s gate refused a claim", func() bool {
		refused, _, _ := g.counts()
		return refused >= n
	})
}

// TestClaimGateFullReplicaPassesQueuedRun: when the session's run ends on
// a replica whose gate is full, the session's queued run is not taken
// there: the other replica takes it, with room its own gate reserved and
// bound to the run until it ended.
func TestClaimGateFullReplicaPassesQueuedRun(t *testing.T) {
	p := startPair(t)
	ga, gb := &countingGate{}, &countingGate{room: 1}
	p.a.SetClaimGate(ga)
	p.b.SetClaimGate(gb)
	queued := p.enqueue(t, p.a, "q1", agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE)
	close(p.g.open)
	waitStatus(t, p.sb, queued, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED)
	if end := <-p.endA; end.err != nil {
		t.Fatalf("a's run: %v", end.err)
	}
	refusedA, boundA, _ := ga.counts()
	if refusedA == 0 || len(boundA) != 0 {
		t.Errorf("a's gate refused %d claims and bound %d, want some refused and none bound", refusedA, len(boundA))
	}
	// b may have tried before a passed the session on, and given that
	// room back: one claim is bound, to the run.
	_, boundB, _ := gb.counts()
	if len(boundB) != 1 {
		t.Fatalf("b's gate bound %d claims, want 1", len(boundB))
	}
	waitClosed(t, boundB[0], "b's claim to end with the run")
	if got := runOrder(t, p.sb, p.k); len(got) != 2 || got[0] != p.runID || got[1] != queued {
		t.Errorf("runs in the session = %v, want [%s %s]", got, p.runID, queued)
	}
}

// TestClaimGateEveryReplicaFull: while every replica's gate is full a
// queued run stays PENDING; once a replica has room again, the end of any
// run there makes it look at the queue, and it takes the run.
func TestClaimGateEveryReplicaFull(t *testing.T) {
	p := startPair(t)
	ga, gb := &countingGate{}, &countingGate{}
	p.a.SetClaimGate(ga)
	p.b.SetClaimGate(gb)
	queued := p.enqueue(t, p.a, "q1", agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE)
	close(p.g.open)
	if end := <-p.endA; end.err != nil {
		t.Fatalf("a's run: %v", end.err)
	}
	// a refuses when its run hands the session on, and again at least
	// once when it looks at the queue after that run; b when told.
	waitRefused(t, ga, "a", 2)
	waitRefused(t, gb, "b", 1)
	rec, err := p.sb.GetRun(t.Context(), queued)
	if err != nil || rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_PENDING {
		t.Fatalf("queued run = %v, %v; want PENDING while every replica is full", rec.GetStatus(), err)
	}

	// Room on a, and a run that ends there: a takes the queued run.
	ga.setRoom(1)
	other := store.SessionKey{App: testApp, User: "u1", Session: "s2"}
	if _, err := p.sa.CreateSession(t.Context(), other, nil); err != nil {
		t.Fatal(err)
	}
	for _, err := range p.a.Stream(t.Context(), request(other, "hello")) {
		if err != nil {
			t.Fatalf("run on another session: %v", err)
		}
	}
	waitStatus(t, p.sb, queued, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED)
	if _, bound, _ := ga.counts(); len(bound) != 1 {
		t.Fatalf("a's gate bound %d claims, want 1 (the queued run)", len(bound))
	}
	if _, bound, _ := gb.counts(); len(bound) != 0 {
		t.Fatalf("b's gate bound %d claims, want none", len(bound))
	}
}
