package replica

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// recoverEvery is the period of the recovery loop of a store that leases
// sessions, given Config.RecoverEvery and the lease's lifetime ttl: by
// default the lifetime, the time after which a dead replica's sessions
// are open again; none when negative.
func recoverEvery(every, ttl time.Duration) time.Duration {
	switch {
	case every < 0:
		return 0
	case every == 0:
		return ttl
	}
	return every
}

// recoverLoop runs the runner's Recover every period, on a store that
// several replicas share: besides the runs a replica left RUNNING (which
// the reaper finds sooner), it finds the pending runs a dead replica took
// from the queue and never started, and the sessions whose queue nobody
// took, which nothing else looks at. A store of one process has no loop:
// while this process lives, no other leaves runs behind.
type recoverLoop struct {
	app         string
	every       time.Duration
	recoverRuns RecoverFunc
	log         *slog.Logger

	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
}

func newRecoverLoop(app string, every time.Duration, recoverRuns RecoverFunc, log *slog.Logger) *recoverLoop {
	ctx, cancel := context.WithCancel(context.Background())
	return &recoverLoop{app: app, every: every, recoverRuns: recoverRuns, log: log, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

func (l *recoverLoop) start() { go l.run() }

// stop ends the loop and waits for a Recover in progress to return.
func (l *recoverLoop) stop() {
	l.stopOnce.Do(func() {
		l.cancel()
		<-l.done
	})
}

func (l *recoverLoop) run() {
	defer close(l.done)
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
		}
		// select picks at random among ready cases: a tick that came with
		// the stop must not start one more Recover.
		if l.ctx.Err() != nil {
			return
		}
		interrupted, requeued, err := l.recoverRuns(l.ctx)
		switch {
		case err != nil && l.ctx.Err() == nil:
			l.log.Warn("recover the runs of other replicas", "app", l.app, "err", err)
		case interrupted+requeued > 0:
			l.log.Info("recovered runs", "app", l.app, "interrupted", interrupted, "requeued", requeued)
		}
	}
}
