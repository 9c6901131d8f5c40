package replica

import (
	"context"
	"sync"
	"time"

	"github.com/agentrunner/agentrunner/store"
)

// reapFloor is the shortest wait between two looks of the reaper, so that
// a lease it cannot take yet (another replica recovering the session that
// moment) does not make it spin.
const reapFloor = 10 * time.Millisecond

// reapMargin is how long after a lease's expiry, as the store counted it,
// the reaper looks again: the time a read takes, so that the lease has
// run out by the store's clock when the reaper comes.
const reapMargin = 5 * time.Millisecond

// reaper marks INTERRUPTED the runs that a replica left RUNNING when it
// died, until Stop: each once its session's lease runs out, whatever the
// session does next. Recover finds them only when a session is idle as it
// looks, and at its own pace; a run taking the session over interrupts
// them first (acquire, claimNext), but a session may take no run for a
// long time. So every replica reads the app's RUNNING runs at each
// heartbeat period, and again just after the first lease of a run not
// live here runs out: a dead replica's run is INTERRUPTED a moment after
// its lease expires, a lease's length at most after the replica's last
// heartbeat.
func (s *shared) reaper() {
	w := &s.sweep
	defer close(w.reaped)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		t.Reset(max(s.reap(w.ctx), reapFloor))
	}
}

// reap interrupts the app's RUNNING runs that no replica runs (their
// session's lease is free) and returns how long until it should look
// again: until the first lease held by a run not live here runs out, at
// most a heartbeat period (a run stored RUNNING after this read is seen
// at the next one).
func (s *shared) reap(ctx context.Context) time.Duration {
	wait := s.every
	runs, err := s.queue.RunningRuns(ctx, s.app)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("look for runs a dead replica left running", "err", err)
		}
		return wait
	}
	var orphans []store.RunningRun
	for _, rr := range runs {
		if s.host.Lookup(rr.Run.GetRunId()) != nil {
			continue
		}
		if rr.Lease.Holder != "" {
			// Its own lease, or a run or a recovery that took the session
			// over and interrupts it: looked at again once that lease
			// runs out, in case its holder died too. A live holder renews
			// its lease a heartbeat before it would.
			wait = min(wait, rr.Left+reapMargin)
			continue
		}
		orphans = append(orphans, rr)
	}
	s.interruptOrphans(ctx, orphans)
	return wait
}

// reapParallel bounds the runs the reaper interrupts at once: a dead
// replica leaves many, all of whose leases run out together, and each
// takes a few round trips.
const reapParallel = 8

// interruptOrphans marks INTERRUPTED the runs whose session lease is free,
// a few at a time, and wakes the sweeper for their sessions, whose queued
// runs may go on now.
func (s *shared) interruptOrphans(ctx context.Context, orphans []store.RunningRun) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, reapParallel)
	for _, rr := range orphans {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			done, err := s.RecoverRunning(ctx, rr.Run)
			switch {
			case err != nil && ctx.Err() == nil:
				s.log.Warn("interrupt a run a dead replica left running", "run", rr.Run.GetRunId(), "err", err)
			case done:
				s.log.Info("interrupted a run a dead replica left running", "run", rr.Run.GetRunId(), "session", rr.Lease.Key.String())
				s.wakeSweep(rr.Lease.Key)
			}
		})
	}
	wg.Wait()
}
