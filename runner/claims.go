package runner

import "github.com/agentrunner/agentrunner/runner/internal/replica"

// ClaimGate bounds the runs a replica takes from the store's shared
// queue: runs that were admitted by some replica, perhaps another one,
// and wait for their session. The server behind a replica counts what it
// admits itself against its limits; its gate counts, against the same
// limits, what its runner takes from the queue, which no admission here
// saw. It also counts the pending runs Recover starts.
type ClaimGate interface {
	// TryClaim reserves room for one run taken from the queue. False
	// leaves the run queued, for another replica or for this one's next
	// sweep of the queue.
	TryClaim() (Claim, bool)
	// Reserve counts a run the runner starts whatever the limit: a
	// pending run that Recover finds on a store of one process, admitted
	// before the restart, which nothing else would ever start.
	Reserve() Claim
}

// Claim is room a ClaimGate reserved.
type Claim interface {
	// Bind keeps the room until done is closed: the run started here.
	Bind(done <-chan struct{})
	// Release gives the room back: no run started with it.
	Release()
}

// replicaGate is a ClaimGate as the replicas ask it: a Claim is theirs
// as it is (the same two methods), only the gate's results are named
// differently.
type replicaGate struct{ g ClaimGate }

func (r replicaGate) TryClaim() (replica.Claim, bool) {
	c, ok := r.g.TryClaim()
	return c, ok // a nil Claim converts to a nil one
}

func (r replicaGate) Reserve() replica.Claim { return r.g.Reserve() }

// gateOf returns g as the replicas take it; nil stays nil.
func gateOf(g ClaimGate) replica.ClaimGate {
	if g == nil {
		return nil
	}
	return replicaGate{g}
}
