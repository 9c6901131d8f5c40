package replica

import (
	"context"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/live"
)

// stored reaches the runs not live in this process where no other
// process can be reached: on a store of one process, or one that leases
// sessions but keeps no queue and sends no notices. Such a run is not
// running anywhere this process could follow or stop: it is as stored.
type stored struct{ store Store }

// Follow replays the run as it is stored.
func (s stored) Follow(ctx context.Context, rec *agentrunnerv1.Run, after uint64, yield func(live.Update, error) bool) live.Followed {
	live.ReplayStored(ctx, s.store, rec, after, yield)
	return live.FollowedToEnd
}

// Cancel returns the run as it is: not live here, it has ended, or runs
// where no cancel can reach it.
func (stored) Cancel(_ context.Context, rec *agentrunnerv1.Run) (*agentrunnerv1.Run, error) {
	return rec, nil
}

// alone recovers the runs of a store that one process owns: a run it
// finds unfinished at start is nobody else's.
type alone struct{ host Host }

// RecoverRunning: no other process can be running it.
func (a alone) RecoverRunning(ctx context.Context, rec *agentrunnerv1.Run) (bool, error) {
	return true, a.host.MarkInterrupted(ctx, rec)
}

// RecoverPending: no other process can be about to start it, so it is
// queued here.
func (alone) RecoverPending(context.Context, *agentrunnerv1.Run) (bool, error) {
	return true, nil
}
