package front

import (
	"context"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/runtrace"
	"github.com/agentrunner/agentrunner/store"
)

// maxTraceEvents bounds the events a trace is built from, so that a run
// of any length answers in one bounded response; a longer run's trace is
// its first maxTraceEvents events', marked truncated.
const maxTraceEvents = 5000

// GetRunTrace returns a run's trace, built from its stored events (see
// runtrace.Build) and the agent tree of its app.
func (d *Desk) GetRunTrace(ctx context.Context, req *servicev1.GetRunTraceRequest) (*servicev1.GetRunTraceResponse, error) {
	app, err := d.runApp(ctx, req.GetRunId())
	if err != nil {
		return nil, err
	}
	run, err := app.GetRun(ctx, req.GetRunId())
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	events, truncated, err := d.runEvents(ctx, run)
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	var root *agentrunnerv1.AgentInfo
	for _, a := range d.apps.List() {
		if a.GetName() == run.GetAppName() {
			root = a.GetRootAgent()
		}
	}
	return &servicev1.GetRunTraceResponse{Run: run, Spans: runtrace.Build(run, events, root), Truncated: truncated}, nil
}

// runEvents reads the stored events of run from its session, from its
// first on, page by page, up to maxTraceEvents. The run's events are a
// contiguous stretch of the session but for other runs' events between
// (a queued run's, an append's), which Build skips.
func (d *Desk) runEvents(ctx context.Context, run *agentrunnerv1.Run) ([]*agentrunnerv1.Event, bool, error) {
	if run.GetFirstSequence() == 0 {
		return nil, false, nil
	}
	k := store.SessionKey{App: run.GetAppName(), User: run.GetUserId(), Session: run.GetSessionId()}
	f := store.EventFilter{AfterSequence: run.GetFirstSequence() - 1}
	var out []*agentrunnerv1.Event
	token := ""
	for range maxTraceEvents {
		events, next, err := d.store.ListEvents(ctx, k, f, store.Page{Size: store.MaxPageSize, Token: token, MaxBytes: d.maxMsg - responseSlack})
		if err != nil {
			return nil, false, err
		}
		for _, ev := range events {
			if ev.GetSequence() > run.GetLastSequence() && run.GetEndTime() != nil {
				return out, false, nil
			}
			if len(out) == maxTraceEvents {
				return out, true, nil
			}
			out = append(out, ev)
		}
		if next == "" {
			break
		}
		token = next
	}
	return out, false, nil
}
