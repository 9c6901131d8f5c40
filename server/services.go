package server

import (
	"iter"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/server/internal/front"
	"google.golang.org/grpc"
)

// The services are the front desk seen through gRPC. The desk answers
// every unary RPC with the service's own request and response messages,
// so each service embeds it and its methods are the RPCs; only the
// streaming RPCs of RunnerService are written here, as a stream of the
// desk's run updates. The Unsafe*Server embeddings make an RPC added to
// the proto and not served by the desk fail to compile, rather than
// answer Unimplemented at run time.

type sessionService struct {
	servicev1.UnsafeSessionServiceServer
	*front.Desk
}

type artifactService struct {
	servicev1.UnsafeArtifactServiceServer
	*front.Desk
}

type memoryService struct {
	servicev1.UnsafeMemoryServiceServer
	*front.Desk
}

type usageService struct {
	servicev1.UnsafeUsageServiceServer
	*front.Desk
}

type scheduleService struct {
	servicev1.UnsafeScheduleServiceServer
	*front.Desk
}

type evalService struct {
	servicev1.UnsafeEvalServiceServer
	*front.Desk
}

type runnerService struct {
	servicev1.UnsafeRunnerServiceServer
	*front.Desk
}

// Run streams one run: its record, its events, its record with the final
// status. The run's own context does not derive from the stream's: when
// the client goes away, on_disconnect decides whether the run is cancelled
// (and the RPC returns once the session is free) or goes on alone.
func (h runnerService) Run(req *servicev1.RunRequest, stream grpc.ServerStreamingServer[servicev1.RunResponse]) error {
	updates, err := h.RunToEncode(stream.Context(), req) // send only encodes the events
	if err != nil {
		return err
	}
	return h.send(stream, updates)
}

// AttachRun follows a run from any client.
func (h runnerService) AttachRun(req *servicev1.AttachRunRequest, stream grpc.ServerStreamingServer[servicev1.RunResponse]) error {
	updates, err := h.Desk.AttachRun(stream.Context(), req)
	if err != nil {
		return err
	}
	return h.send(stream, updates)
}

// ResumeRun continues an interrupted run, or answers one that waits.
func (h runnerService) ResumeRun(req *servicev1.ResumeRunRequest, stream grpc.ServerStreamingServer[servicev1.RunResponse]) error {
	updates, err := h.Desk.ResumeRun(stream.Context(), req)
	if err != nil {
		return err
	}
	return h.send(stream, updates)
}

// eventResponse wraps ev for the stream in one allocation instead of two
// (the response and its oneof's wrapper): a streamed answer sends one
// per chunk. Each is the stream's own: gRPC may read a message after
// SendMsg returns (stats handlers), so none is reused.
func eventResponse(ev *agentrunnerv1.Event) *servicev1.RunResponse {
	r := &struct {
		resp    servicev1.RunResponse
		payload servicev1.RunResponse_Event
	}{}
	r.payload.Event = ev
	r.resp.Payload = &r.payload
	return &r.resp
}

// send streams a run's updates. A terminal error ends the RPC with its
// status; a failed Send ends it too (the runner's reader stops, and the
// run's on_disconnect applies).
func (h runnerService) send(stream grpc.ServerStreamingServer[servicev1.RunResponse], seq iter.Seq2[runner.Update, error]) error {
	ctx := stream.Context()
	for u, err := range seq {
		var resp *servicev1.RunResponse
		switch {
		case err != nil:
			return h.Status(ctx, err)
		case u.Err != nil:
			resp = &servicev1.RunResponse{Payload: &servicev1.RunResponse_Error{Error: front.AgentStatus(u.Err)}}
		case u.Run != nil:
			resp = &servicev1.RunResponse{Payload: &servicev1.RunResponse_Run{Run: u.Run}}
		default:
			resp = eventResponse(u.Event)
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	return nil
}
