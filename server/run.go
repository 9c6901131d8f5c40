package server

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strconv"
	"strings"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// runnerService implements servicev1.RunnerServiceServer.
type runnerService struct {
	// Embedded so that a missing RPC fails to compile.
	servicev1.UnsafeRunnerServiceServer
	s *Server
}

// Run streams one run: its record, its events, its record with the final
// status. The run's own context does not derive from the stream's: when
// the client goes away, on_disconnect decides whether the run is cancelled
// (and the RPC returns once the session is free) or goes on alone.
func (h runnerService) Run(req *servicev1.RunRequest, stream grpc.ServerStreamingServer[servicev1.RunResponse]) error {
	updates, err := h.s.streamRun(stream.Context(), req, true) // send only encodes the events
	if err != nil {
		return err
	}
	return h.s.send(stream, updates)
}

// StartRun admits a run and returns its record; the run goes on alone.
func (h runnerService) StartRun(ctx context.Context, req *servicev1.StartRunRequest) (*servicev1.StartRunResponse, error) {
	// The same checks as Run's: the fields are the same.
	asRun := &servicev1.RunRequest{
		AppName: req.GetAppName(), UserId: req.GetUserId(), SessionId: req.GetSessionId(),
		NewMessage: req.GetNewMessage(), StateDelta: req.GetStateDelta(), RunConfig: req.GetRunConfig(),
		RequestId: req.GetRequestId(), MultitaskStrategy: req.GetMultitaskStrategy(),
	}
	k, err := validateRunRequest(asRun)
	if err == nil {
		err = h.s.checkContentLimits("new_message", asRun.GetNewMessage())
	}
	if err != nil {
		return nil, err
	}
	app, ok := h.s.apps.Lookup(k.App)
	if !ok {
		return nil, unknownApp(k.App)
	}
	slot, err := h.s.acquireRun(ctx)
	if err != nil {
		return nil, err
	}
	rr := h.s.runnerRequest(asRun)
	rr.OnDisconnect = agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE
	run, err := app.Start(ctx, rr)
	if err != nil {
		h.s.runs.release(slot)
		return nil, h.s.toStatus(ctx, err)
	}
	h.s.runs.bind(slot, app.RunDone(run.GetRunId()))
	return &servicev1.StartRunResponse{Run: run}, nil
}

// runnerRequest converts a validated RunRequest.
func (s *Server) runnerRequest(req *servicev1.RunRequest) runner.Request {
	return runner.Request{
		UserID:     req.GetUserId(),
		SessionID:  req.GetSessionId(),
		NewMessage: req.GetNewMessage(),
		StateDelta: req.GetStateDelta(),
		Config:     req.GetRunConfig(),
		RequestID:  req.GetRequestId(),
		Strategy:   req.GetMultitaskStrategy(),
		Timeout:    s.maxRun,
	}
}

// GetRun returns a run's record.
func (h runnerService) GetRun(ctx context.Context, req *servicev1.GetRunRequest) (*servicev1.GetRunResponse, error) {
	app, err := h.s.runApp(ctx, req.GetRunId())
	if err != nil {
		return nil, err
	}
	run, err := app.GetRun(ctx, req.GetRunId())
	if err != nil {
		return nil, h.s.toStatus(ctx, err)
	}
	return &servicev1.GetRunResponse{Run: run}, nil
}

// ListRuns lists runs newest first: a session's, a user's across their
// sessions, or (admins only, see authz.go) every user's of the app.
func (h runnerService) ListRuns(ctx context.Context, req *servicev1.ListRunsRequest) (*servicev1.ListRunsResponse, error) {
	f, err := validateListRuns(req)
	if err != nil {
		return nil, err
	}
	if err := h.s.checkPage(req); err != nil {
		return nil, err
	}
	app, ok := h.s.apps.Lookup(f.App)
	if !ok {
		return nil, unknownApp(f.App)
	}
	runs, next, err := app.ListRunsOf(ctx, f, store.Page{Size: int(req.GetPageSize()), Token: req.GetPageToken()})
	if err != nil {
		return nil, h.s.toStatus(ctx, err)
	}
	return &servicev1.ListRunsResponse{Runs: runs, NextPageToken: next}, nil
}

// CancelRun cancels a run and returns its record once that took effect.
func (h runnerService) CancelRun(ctx context.Context, req *servicev1.CancelRunRequest) (*servicev1.CancelRunResponse, error) {
	app, err := h.s.runApp(ctx, req.GetRunId())
	if err != nil {
		return nil, err
	}
	run, err := app.Cancel(ctx, req.GetRunId())
	if err != nil {
		return nil, h.s.toStatus(ctx, err)
	}
	return &servicev1.CancelRunResponse{Run: run}, nil
}

// AttachRun follows a run from any client.
func (h runnerService) AttachRun(req *servicev1.AttachRunRequest, stream grpc.ServerStreamingServer[servicev1.RunResponse]) error {
	app, err := h.s.runApp(stream.Context(), req.GetRunId())
	if err != nil {
		return err
	}
	return h.s.send(stream, app.Attach(stream.Context(), req.GetRunId(), req.GetAfterSequence()))
}

// ResumeRun continues an interrupted run, or answers one that waits.
func (h runnerService) ResumeRun(req *servicev1.ResumeRunRequest, stream grpc.ServerStreamingServer[servicev1.RunResponse]) error {
	updates, err := h.s.ResumeRun(stream.Context(), req)
	if err != nil {
		return err
	}
	return h.s.send(stream, updates)
}

// runApp returns the runner of the app a run belongs to: one that has it
// live, or the one its stored record names. With authentication on it is
// also where run-id RPCs are authorized: a non-admin caller gets the same
// PermissionDenied for a run that does not exist and for one of a user or
// app it is not granted, so the answer never tells which.
func (s *Server) runApp(ctx context.Context, runID string) (AppRunner, error) {
	if err := checkID("run_id", runID); err != nil {
		return nil, err
	}
	app, err := s.findRunApp(ctx, runID)
	p := principalFrom(ctx)
	if p == nil || p.Admin {
		return app, err
	}
	if err != nil && status.Code(err) != codes.NotFound {
		return nil, err
	}
	if err == nil {
		rec, gerr := app.GetRun(ctx, runID)
		switch {
		case gerr == nil && p.MayUse(rec.GetAppName(), rec.GetUserId()):
			return app, nil
		case gerr != nil && !errors.Is(gerr, store.ErrNotFound):
			return nil, s.toStatus(ctx, gerr)
		}
	}
	return nil, s.authz.deny(ctx, codes.PermissionDenied, p.Name, methodOf(ctx), "no run "+strconv.Quote(runID)+" this principal may use")
}

func (s *Server) findRunApp(ctx context.Context, runID string) (AppRunner, error) {
	for _, a := range s.apps.List() {
		if app, ok := s.apps.Lookup(a.GetName()); ok && app.HasLiveRun(runID) {
			return app, nil
		}
	}
	rec, err := s.store.GetRun(ctx, runID)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	app, ok := s.apps.Lookup(rec.GetAppName())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "run %s belongs to app %q, which is not served here", runID, rec.GetAppName())
	}
	return app, nil
}

// send streams a run's updates. A terminal error ends the RPC with its
// status; a failed Send ends it too (the runner's reader stops, and the
// run's on_disconnect applies).
func (s *Server) send(stream grpc.ServerStreamingServer[servicev1.RunResponse], seq iter.Seq2[runner.Update, error]) error {
	ctx := stream.Context()
	for u, err := range seq {
		var resp *servicev1.RunResponse
		switch {
		case err != nil:
			return s.toStatus(ctx, err)
		case u.Err != nil:
			resp = &servicev1.RunResponse{Payload: &servicev1.RunResponse_Error{Error: agentStatus(asAgentError(u.Err))}}
		case u.Run != nil:
			resp = &servicev1.RunResponse{Payload: &servicev1.RunResponse_Run{Run: u.Run}}
		default:
			resp = &servicev1.RunResponse{Payload: &servicev1.RunResponse_Event{Event: u.Event}}
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	return nil
}

// asAgentError returns the AgentError in err's chain, or one wrapping
// err. It is apart from send so that the target errors.As needs escapes
// only for an update that carries an error, not for every one.
func asAgentError(err error) *agent.AgentError {
	var agentErr *agent.AgentError
	if errors.As(err, &agentErr) {
		return agentErr
	}
	return &agent.AgentError{Err: err}
}

func unknownApp(name string) error {
	return status.Errorf(codes.NotFound, "app %q is not served here; ListApps shows the apps that are", name)
}

func (h runnerService) ListApps(ctx context.Context, _ *servicev1.ListAppsRequest) (*servicev1.ListAppsResponse, error) {
	apps := slices.Clone(h.s.apps.List())
	// A principal sees the apps it may use.
	if p := principalFrom(ctx); p != nil {
		apps = slices.DeleteFunc(apps, func(a *agentrunnerv1.App) bool { return !p.MayUseApp(a.GetName()) })
	}
	slices.SortFunc(apps, func(a, b *agentrunnerv1.App) int { return strings.Compare(a.GetName(), b.GetName()) })
	return &servicev1.ListAppsResponse{Apps: apps}, nil
}
