package server

import (
	"context"
	"errors"
	"slices"
	"strings"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
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

// Run streams one run. The runner's context derives from the stream's, so
// a client that cancels or goes away cancels the agents; a failed Send
// stops the iteration, which tells the runner to stop too.
func (h runnerService) Run(req *servicev1.RunRequest, stream grpc.ServerStreamingServer[servicev1.RunResponse]) error {
	k, err := validateRunRequest(req)
	if err != nil {
		return err
	}
	app, ok := h.s.apps.Lookup(k.App)
	if !ok {
		return status.Errorf(codes.NotFound, "app %q is not served here; ListApps shows the apps that are", k.App)
	}
	ctx := stream.Context()
	if h.s.maxRun > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.s.maxRun)
		defer cancel()
	}
	seq := app.Run(ctx, runner.Request{
		UserID:     k.User,
		SessionID:  k.Session,
		NewMessage: req.GetNewMessage(),
		StateDelta: req.GetStateDelta(),
		Config:     req.GetRunConfig(),
	})
	for ev, err := range seq {
		var resp *servicev1.RunResponse
		if agentErr := (*agent.AgentError)(nil); errors.As(err, &agentErr) {
			resp = &servicev1.RunResponse{Payload: &servicev1.RunResponse_Error{Error: agentStatus(agentErr)}}
		} else if err != nil {
			return h.s.toStatus(ctx, err)
		} else {
			resp = &servicev1.RunResponse{Payload: &servicev1.RunResponse_Event{Event: ev}}
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	return nil
}

func (h runnerService) ListApps(ctx context.Context, _ *servicev1.ListAppsRequest) (*servicev1.ListAppsResponse, error) {
	apps := slices.Clone(h.s.apps.List())
	slices.SortFunc(apps, func(a, b *agentrunnerv1.App) int { return strings.Compare(a.GetName(), b.GetName()) })
	return &servicev1.ListAppsResponse{Apps: apps}, nil
}
