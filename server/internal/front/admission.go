package front

import (
	"context"
	"errors"
	"iter"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/store"
)

// This file is the one admission of runs: Run, StartRun and ResumeRun,
// on every protocol (gRPC, the console through it, A2A), are checked,
// limited and counted here, and nowhere else.

// Run admits a run and returns its updates: its record, its events, its
// record with the final status. The caller has authorized the request's
// user (the gRPC interceptors, or server/a2a with AuthorizeUser). Errors
// before the run are statuses; the sequence's own are the runner's (see
// Status). The events are the caller's to keep.
func (d *Desk) Run(ctx context.Context, req *servicev1.RunRequest) (iter.Seq2[runner.Update, error], error) {
	return d.run(ctx, req, false)
}

// RunToEncode is Run for a caller that only encodes each event before the
// next (the gRPC stream): it is handed the runner's own events, not
// copies.
func (d *Desk) RunToEncode(ctx context.Context, req *servicev1.RunRequest) (iter.Seq2[runner.Update, error], error) {
	return d.run(ctx, req, true)
}

func (d *Desk) run(ctx context.Context, req *servicev1.RunRequest, sharedEvents bool) (iter.Seq2[runner.Update, error], error) {
	app, slot, rr, err := d.admit(ctx, req)
	if err != nil {
		return nil, err
	}
	rr.OnDisconnect = req.GetOnDisconnect()
	rr.SharedEvents = sharedEvents
	return d.runs.tracked(slot, app.RunDone, app.Stream(ctx, rr)), nil
}

// StartRun admits a run and returns its record; the run goes on alone,
// counted against the limits until it ends.
func (d *Desk) StartRun(ctx context.Context, req *servicev1.StartRunRequest) (*servicev1.StartRunResponse, error) {
	return d.startRun(ctx, req, "")
}

// startRun is StartRun for a run that schedule scheduleID starts, or
// none ("").
func (d *Desk) startRun(ctx context.Context, req *servicev1.StartRunRequest, scheduleID string) (*servicev1.StartRunResponse, error) {
	if err := d.checkWebhook(req.GetWebhook()); err != nil {
		return nil, err
	}
	// The same admission as Run's: the fields are the same.
	app, slot, rr, err := d.admit(ctx, &servicev1.RunRequest{
		AppName: req.GetAppName(), UserId: req.GetUserId(), SessionId: req.GetSessionId(),
		NewMessage: req.GetNewMessage(), StateDelta: req.GetStateDelta(), RunConfig: req.GetRunConfig(),
		RequestId: req.GetRequestId(), MultitaskStrategy: req.GetMultitaskStrategy(),
	})
	if err != nil {
		return nil, err
	}
	rr.OnDisconnect = agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE
	rr.Webhook = req.GetWebhook()
	rr.ScheduleID = scheduleID
	run, err := app.Start(ctx, rr)
	if err != nil {
		d.runs.release(slot)
		return nil, d.toStatus(ctx, err)
	}
	d.runs.bind(slot, app.RunDone(run.GetRunId()))
	return &servicev1.StartRunResponse{Run: run}, nil
}

// admit checks a run request (its fields, its content against the
// limits, its app) and takes a slot among the runs in progress. The
// slot is the caller's to bind to the run or release.
func (d *Desk) admit(ctx context.Context, req *servicev1.RunRequest) (AppRunner, *runSlot, runner.Request, error) {
	k, err := validateRunRequest(req)
	if err == nil {
		err = d.checkContentLimits("new_message", req.GetNewMessage())
	}
	if err != nil {
		return nil, nil, runner.Request{}, err
	}
	app, ok := d.apps.Lookup(k.App)
	if !ok {
		return nil, nil, runner.Request{}, unknownApp(k.App)
	}
	slot, err := d.acquireRun(ctx)
	if err != nil {
		return nil, nil, runner.Request{}, err
	}
	return app, slot, runner.Request{
		UserID:     req.GetUserId(),
		SessionID:  req.GetSessionId(),
		NewMessage: req.GetNewMessage(),
		StateDelta: req.GetStateDelta(),
		Config:     req.GetRunConfig(),
		RequestID:  req.GetRequestId(),
		Strategy:   req.GetMultitaskStrategy(),
		Timeout:    d.maxRun,
	}, nil
}

// ResumeRun admits the continuation of an interrupted run, or the answers
// of one that waits: the run authorized by id (RunApp), the answers
// checked, the run counted. It returns the run's updates.
func (d *Desk) ResumeRun(ctx context.Context, req *servicev1.ResumeRunRequest) (iter.Seq2[runner.Update, error], error) {
	if err := validateResumeRun(req); err != nil {
		return nil, err
	}
	if err := d.checkContentLimits("answers", req.GetAnswers()); err != nil {
		return nil, err
	}
	app, err := d.runApp(ctx, req.GetRunId())
	if err != nil {
		return nil, err
	}
	slot, err := d.acquireRun(ctx)
	if err != nil {
		return nil, err
	}
	return d.runs.tracked(slot, app.RunDone, app.Resume(ctx, runner.ResumeRequest{
		RunID:        req.GetRunId(),
		Answers:      req.GetAnswers(),
		RetryCallIDs: req.GetRetryCallIds(),
		OnDisconnect: req.GetOnDisconnect(),
		Timeout:      d.maxRun,
	})), nil
}

// AttachRun follows a run from any client, authorized by its id.
func (d *Desk) AttachRun(ctx context.Context, req *servicev1.AttachRunRequest) (iter.Seq2[runner.Update, error], error) {
	app, err := d.runApp(ctx, req.GetRunId())
	if err != nil {
		return nil, err
	}
	return app.Attach(ctx, req.GetRunId(), req.GetAfterSequence()), nil
}

// CheckBudgets refuses, as a status, a run of session k that the app's
// budgets would refuse at once, before anything is created (see
// runner.Runner.CheckBudgets), for a protocol that creates the session
// of a run itself (A2A). An app without budgets refuses nothing.
func (d *Desk) CheckBudgets(ctx context.Context, k store.SessionKey) error {
	app, ok := d.apps.Lookup(k.App)
	if !ok {
		return unknownApp(k.App)
	}
	bc, ok := app.(interface {
		CheckBudgets(ctx context.Context, user, session string) error
	})
	if !ok {
		return nil
	}
	return d.toStatus(ctx, bc.CheckBudgets(ctx, k.User, k.Session))
}

// OpenSession makes sure the session exists, creating it empty when it
// does not; created says which. The caller has authorized the user.
func (d *Desk) OpenSession(ctx context.Context, k store.SessionKey) (created bool, err error) {
	for _, id := range []struct{ f, v string }{{"app_name", k.App}, {"user_id", k.User}, {"session_id", k.Session}} {
		if err := checkID(id.f, id.v); err != nil {
			return false, err
		}
	}
	if _, ok := d.apps.Lookup(k.App); !ok {
		return false, unknownApp(k.App)
	}
	_, err = d.store.CreateSession(ctx, k, nil)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrAlreadyExists):
		return false, nil
	}
	return false, d.toStatus(ctx, err)
}

// RunApp returns the runner of the app a run belongs to, authorized as
// the run-id RPCs are: a caller that may not use the run gets the same
// PermissionDenied whether it exists or not.
func (d *Desk) RunApp(ctx context.Context, runID string) (AppRunner, error) {
	return d.runApp(ctx, runID)
}

// checkWebhook refuses, before anything is admitted, a webhook whose URL
// the server would not call: not http(s), or to a host it does not allow.
func (d *Desk) checkWebhook(wh *agentrunnerv1.Webhook) error {
	switch {
	case wh == nil:
		return nil
	case wh.GetUrl() == "":
		return invalid("webhook.url", "is empty")
	case d.webhookURL == nil:
		return invalid("webhook.url", "this server calls no webhooks (agentrunner serve --webhook-allow-hosts)")
	}
	if err := d.webhookURL(wh.GetUrl()); err != nil {
		return invalid("webhook.url", "%v", err)
	}
	return nil
}
