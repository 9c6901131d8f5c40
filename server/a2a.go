package server

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"strconv"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/server/auth"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// This file is the server's face to package server/a2a, which serves the
// apps over the Agent2Agent protocol. A2A requests name no user_id, so the
// interceptors cannot scope them (methodAccess gives every A2A method
// accessA2A): server/a2a chooses the user of each call and asks
// AuthorizeUser, and everything that touches a run goes through the same
// checks, limits and run-id authorization as the RunnerService RPCs.

// a2aMethods are the full names of lf.a2a.v1.A2AService, which
// cmd/agentrunner registers on the grpc.Server beside ours.
func a2aMethods() []string { return methodNames(a2apb.A2AService_ServiceDesc) }

// Caller returns the principal admitted for this call (by the auth
// interceptor, or AuthenticateHTTP); nil when authentication is off.
func Caller(ctx context.Context) *auth.Principal { return principalFrom(ctx) }

// Auth returns the auth file's principals; nil when authentication is off.
func (s *Server) Auth() *auth.Config { return s.authz.cfg }

// AuthenticateHTTP authenticates a request of A2A's HTTP bindings (JSON-RPC,
// REST) as the gRPC port authenticates a call: its Authorization bearer
// token, else its verified TLS client certificate. It returns the
// request's context carrying the principal; with authentication off, the
// request's context. A refusal is an Unauthenticated status, logged once.
func (s *Server) AuthenticateHTTP(r *http.Request) (context.Context, error) {
	if s.authz.cfg == nil {
		return r.Context(), nil
	}
	// authenticate reads gRPC metadata and peer: give it the request's
	// credentials in that form, so both paths share one reading of them.
	creds := metadata.NewIncomingContext(r.Context(), metadata.MD{"authorization": r.Header.Values("Authorization")})
	if r.TLS != nil {
		creds = peer.NewContext(creds, &peer.Peer{AuthInfo: credentials.TLSInfo{State: *r.TLS}})
	}
	p, reason := s.authz.authenticate(creds)
	if p == nil {
		return nil, s.authz.deny(r.Context(), codes.Unauthenticated, "", "A2A "+r.Method+" "+r.URL.Path, reason)
	}
	return context.WithValue(r.Context(), principalKey{}, p), nil
}

// AuthorizeUser refuses (PermissionDenied, logged once) a caller that may
// not act as user on app; with authentication off it allows everything.
func (s *Server) AuthorizeUser(ctx context.Context, app, user string) error {
	p := principalFrom(ctx)
	if p == nil || p.MayUse(app, user) {
		return nil
	}
	return s.authz.deny(ctx, codes.PermissionDenied, p.Name, methodOf(ctx), "not granted user "+strconv.Quote(user)+" on app "+strconv.Quote(app))
}

// CheckBudgets refuses, as a status, a run of session k that the app's
// budgets would refuse at once, before anything is created (see
// runner.Runner.CheckBudgets). An app without budgets refuses nothing.
func (s *Server) CheckBudgets(ctx context.Context, k store.SessionKey) error {
	app, ok := s.apps.Lookup(k.App)
	if !ok {
		return unknownApp(k.App)
	}
	bc, ok := app.(interface {
		CheckBudgets(ctx context.Context, user, session string) error
	})
	if !ok {
		return nil
	}
	return s.toStatus(ctx, bc.CheckBudgets(ctx, k.User, k.Session))
}

// OpenSession makes sure the session exists, creating it empty when it
// does not; created says which. The caller has authorized the user.
func (s *Server) OpenSession(ctx context.Context, k store.SessionKey) (created bool, err error) {
	for _, id := range []struct{ f, v string }{{"app_name", k.App}, {"user_id", k.User}, {"session_id", k.Session}} {
		if err := checkID(id.f, id.v); err != nil {
			return false, err
		}
	}
	if _, ok := s.apps.Lookup(k.App); !ok {
		return false, unknownApp(k.App)
	}
	_, err = s.store.CreateSession(ctx, k, nil)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrAlreadyExists):
		return false, nil
	}
	return false, s.toStatus(ctx, err)
}

// StreamRun is RunnerService.Run without its stream: the request checked
// as Run checks it, counted against the limits of runs in progress, and
// the run's updates. The caller has authorized the request's user. Errors
// before the run are statuses; the sequence's own are the runner's (see
// Status).
func (s *Server) StreamRun(ctx context.Context, req *servicev1.RunRequest) (iter.Seq2[runner.Update, error], error) {
	return s.streamRun(ctx, req, false)
}

// streamRun checks and admits a Run request and returns its updates, as
// RunnerService.Run and StreamRun share it. sharedEvents hands the
// consumer the runner's own events, for one that only encodes them.
func (s *Server) streamRun(ctx context.Context, req *servicev1.RunRequest, sharedEvents bool) (iter.Seq2[runner.Update, error], error) {
	k, err := validateRunRequest(req)
	if err == nil {
		err = s.checkContentLimits("new_message", req.GetNewMessage())
	}
	if err != nil {
		return nil, err
	}
	app, ok := s.apps.Lookup(k.App)
	if !ok {
		return nil, unknownApp(k.App)
	}
	slot, err := s.acquireRun(ctx)
	if err != nil {
		return nil, err
	}
	rr := s.runnerRequest(req)
	rr.OnDisconnect = req.GetOnDisconnect()
	rr.SharedEvents = sharedEvents
	return s.runs.tracked(slot, app, app.Stream(ctx, rr)), nil
}

// ResumeRun is RunnerService.ResumeRun without its stream: the run
// authorized by id (RunApp), the answers checked, the run counted.
func (s *Server) ResumeRun(ctx context.Context, req *servicev1.ResumeRunRequest) (iter.Seq2[runner.Update, error], error) {
	if err := validateResumeRun(req); err != nil {
		return nil, err
	}
	if err := s.checkContentLimits("answers", req.GetAnswers()); err != nil {
		return nil, err
	}
	app, err := s.runApp(ctx, req.GetRunId())
	if err != nil {
		return nil, err
	}
	slot, err := s.acquireRun(ctx)
	if err != nil {
		return nil, err
	}
	return s.runs.tracked(slot, app, app.Resume(ctx, runner.ResumeRequest{
		RunID:        req.GetRunId(),
		Answers:      req.GetAnswers(),
		RetryCallIDs: req.GetRetryCallIds(),
		OnDisconnect: req.GetOnDisconnect(),
		Timeout:      s.maxRun,
	})), nil
}

// RunApp returns the runner of the app a run belongs to, authorized as
// the run-id RPCs are: a caller that may not use the run gets the same
// PermissionDenied whether it exists or not.
func (s *Server) RunApp(ctx context.Context, runID string) (AppRunner, error) {
	return s.runApp(ctx, runID)
}

// Apps returns the apps the server hosts.
func (s *Server) Apps() Apps { return s.apps }

// Store returns the server's store (artifacts of a run, for A2A).
func (s *Server) Store() Store { return s.store }

// MaxPageSize is the largest page a listing returns.
func (s *Server) MaxPageSize() int { return s.limits.MaxPageSize }

// MaxMessageBytes is the largest message the server sends or receives.
func (s *Server) MaxMessageBytes() int { return s.maxMsg }

// Status maps an error of the runner or the store to a gRPC status as
// every RPC does: sentinels to their codes, anything else logged and
// Internal. A status passes through.
func (s *Server) Status(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	return s.toStatus(ctx, err)
}

// StatusOf is Status's code and message, for a caller that speaks another
// protocol's errors.
func StatusOf(err error) (codes.Code, string) {
	st, _ := status.FromError(err)
	return st.Code(), st.Message()
}
