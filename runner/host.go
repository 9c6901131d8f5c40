package runner

import (
	"context"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/live"
	"github.com/agentrunner/agentrunner/runner/internal/turn"
	"github.com/agentrunner/agentrunner/store"
)

// host is the runner as the replicas see it (replica.Host).
type host struct{ r *Runner }

func (h host) Lookup(id string) *live.Run {
	if lr := h.r.lookup(id); lr != nil {
		return lr.Run
	}
	return nil
}

func (h host) SessionFree(k store.SessionKey) bool {
	h.r.runs.mu.Lock()
	defer h.r.runs.mu.Unlock()
	return !h.r.runs.draining && !h.r.runs.sessions[k].busy()
}

// StartClaimed makes a run taken from the store's queue the active run of
// its session, as a requeued run rebuilt from its record, and launches it;
// false when the runner is draining.
func (h host) StartClaimed(rec *agentrunnerv1.Run, started func(*live.Run)) bool {
	r := h.r
	lr := r.liveFromRecord(rec)
	r.runs.mu.Lock()
	defer r.runs.mu.Unlock()
	if r.runs.draining {
		return false
	}
	sr := r.runs.sessions[lr.Key]
	if sr == nil {
		sr = &sessionRuns{}
		r.runs.sessions[lr.Key] = sr
	}
	r.runs.byID[lr.ID] = lr
	started(lr.Run)
	if sr.busy() {
		// A run of this process that was admitted meanwhile: it finds the
		// lease taken and ends, and this run starts from the queue then.
		sr.queue = append([]*liveRun{lr}, sr.queue...)
		return true
	}
	sr.active = lr
	lr.started = true
	r.launchLocked(lr, nil)
	return true
}

// CancelLocal cancels a run of this process on another replica's request.
func (h host) CancelLocal(id string, cause error) {
	lr := h.r.lookup(id)
	if lr == nil {
		return
	}
	if _, ok := h.r.cancelQueued(context.Background(), lr, cause); !ok {
		lr.Cancel(cause)
	}
}

func (h host) MarkInterrupted(ctx context.Context, rec *agentrunnerv1.Run) error {
	return turn.MarkInterrupted(ctx, h.r.configOf(rec.GetConfigVersion()).env, rec)
}
