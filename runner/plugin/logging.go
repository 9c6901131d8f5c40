package plugin

import (
	"context"
	"log/slog"
	"sync"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
)

// LoggingName is the name of the plugin NewLogging returns.
const LoggingName = "logging"

// Logging logs runs through log/slog: start and end at debug (with the
// run's duration and event count), a failed run, model errors and tool
// errors at info or warn. It never logs message content. Put it first in
// the list so that its before_run sees every run.
type Logging struct {
	log    *slog.Logger
	now    func() time.Time
	mu     sync.Mutex
	starts map[string]runStart // by invocation id
}

type runStart struct {
	at     time.Time
	events int
}

// NewLogging returns the logging plugin writing to log.
func NewLogging(log *slog.Logger) *Logging {
	return &Logging{log: log, now: time.Now, starts: map[string]runStart{}}
}

func (l *Logging) Name() string { return LoggingName }

func (l *Logging) with(ctx agent.ReadonlyContext) *slog.Logger {
	return l.log.With("app", ctx.AppName(), "user", ctx.UserID(), "session", ctx.SessionID(), "invocation", ctx.InvocationID())
}

func (l *Logging) BeforeRun(ctx agent.InvocationContext) (*agentrunnerv1.Content, error) {
	l.mu.Lock()
	l.starts[ctx.InvocationID()] = runStart{at: l.now()}
	l.mu.Unlock()
	if l.log.Enabled(ctx, slog.LevelDebug) {
		l.with(ctx).DebugContext(ctx, "run started", "agent", ctx.AgentName())
	}
	return nil, nil
}

// CompleteEventsOnly marks OnEvent as a CompleteEventHook: partial events
// are not the run's.
func (l *Logging) CompleteEventsOnly() {}

func (l *Logging) OnEvent(ctx agent.InvocationContext, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	if ev.GetPartial() {
		return nil, nil // the run's events are those it stores
	}
	l.mu.Lock()
	if s, ok := l.starts[ctx.InvocationID()]; ok {
		s.events++
		l.starts[ctx.InvocationID()] = s
	}
	l.mu.Unlock()
	return nil, nil
}

func (l *Logging) AfterRun(ctx agent.InvocationContext, err error) {
	l.mu.Lock()
	s, ok := l.starts[ctx.InvocationID()]
	delete(l.starts, ctx.InvocationID())
	l.mu.Unlock()
	level, msg := slog.LevelDebug, "run finished"
	switch {
	case err != nil && ctx.Err() == nil:
		level, msg = slog.LevelInfo, "run failed"
	case err != nil:
		msg = "run cancelled"
	}
	// The run's context may be done; the record is still wanted.
	lctx := context.WithoutCancel(ctx)
	if !l.log.Enabled(lctx, level) {
		return // nothing to build: the common case, a successful run
	}
	attrs := []any{"events", s.events}
	if ok {
		attrs = append(attrs, "duration", l.now().Sub(s.at))
	}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	l.with(ctx).Log(lctx, level, msg, attrs...)
}

func (l *Logging) OnModelError(ctx agent.CallbackContext, req *model.Request, err error) (*model.Response, error) {
	l.with(ctx).InfoContext(ctx, "model error", "agent", ctx.AgentName(), "err", err)
	return nil, nil
}

func (l *Logging) OnToolError(ctx tool.Context, t tool.Tool, args map[string]any, err error) (map[string]any, error) {
	l.with(ctx).InfoContext(ctx, "tool error", "agent", ctx.AgentName(), "tool", t.Name(), "call", ctx.FunctionCallID(), "err", err)
	return nil, nil
}
