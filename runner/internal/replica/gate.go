package replica

import "sync/atomic"

// ClaimGate bounds the runs a replica takes from the store's shared queue:
// runs that were admitted by some replica, perhaps another one, and wait
// for their session. The server behind a replica counts what it admits
// itself against its limits; its gate counts, against the same limits,
// what its runner takes from the queue, which no admission here saw.
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

// Claims is where the runner keeps its ClaimGate, shared by every
// replica mode: a store of one process counts the pending runs Recover
// starts (Reserve); a shared queue also asks it before it takes a run.
type Claims struct{ gate claimGate }

// Set makes g the gate; nil lets the runner take every run it can,
// uncounted. It may be called while runs go on: a claim already made
// keeps its room.
func (c *Claims) Set(g ClaimGate) { c.gate.set(g) }

// Reserve counts a run the runner starts whatever the limit (see
// ClaimGate.Reserve), until done is closed.
func (c *Claims) Reserve(done <-chan struct{}) { bindClaim(c.gate.reserve(), done) }

// gateBox holds a ClaimGate for an atomic.Pointer.
type gateBox struct{ g ClaimGate }

// claimGate is where Claims.Set keeps the gate: it may be set while
// runs go on, and a claim already made keeps its room.
type claimGate struct{ p atomic.Pointer[gateBox] }

func (c *claimGate) set(g ClaimGate) {
	if g == nil {
		c.p.Store(nil)
		return
	}
	c.p.Store(&gateBox{g: g})
}

// tryClaim asks the gate for room; without a gate there is always some
// (a nil Claim).
func (c *claimGate) tryClaim() (Claim, bool) {
	b := c.p.Load()
	if b == nil {
		return nil, true
	}
	return b.g.TryClaim()
}

// reserve counts a run that starts whatever the limit (see
// ClaimGate.Reserve); without a gate it is a nil Claim.
func (c *claimGate) reserve() Claim {
	b := c.p.Load()
	if b == nil {
		return nil
	}
	return b.g.Reserve()
}

// bindClaim and releaseClaimRoom apply to a claim that may be nil.
func bindClaim(c Claim, done <-chan struct{}) {
	if c != nil {
		c.Bind(done)
	}
}

func releaseClaimRoom(c Claim) {
	if c != nil {
		c.Release()
	}
}
