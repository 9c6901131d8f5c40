package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/agentrunner/agentrunner/server"
)

// startScheduler fires the server's schedules until ctx is done or the
// returned func is called, which waits for the scheduler to stop. On a
// store without schedules it logs why and does nothing.
func startScheduler(ctx context.Context, core *server.Server, replica string, log *slog.Logger) (stop func()) {
	if replica == "" {
		host, _ := os.Hostname()
		replica = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	sched, err := core.NewScheduler(replica, log)
	if err != nil {
		log.Warn("schedules are off", "err", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sched.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
