package front

import (
	"context"
	"crypto/x509"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/server/auth"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// Access is what a method asks of its caller when authentication is on.
type Access int

const (
	// AccessOpen: anyone, authenticated or not (health checks).
	AccessOpen Access = iota + 1
	// AccessAuthenticated: any principal of the auth file (reflection,
	// ListApps, which lists only the apps the principal may use).
	AccessAuthenticated
	// AccessScoped: a principal that may act as the request's user_id on
	// its app_name; an empty user_id (listing every user) is admin-only.
	AccessScoped
	// AccessRun: any principal here; the handler looks the run up and
	// calls authorizeRun before anything else, answering PermissionDenied
	// alike for a run that is missing and one that is someone else's.
	AccessRun
	// AccessA2A: any principal here (A2A requests name no user); package
	// server/a2a picks the call's user and checks it with AuthorizeUser,
	// and authorizes task ids as AccessRun does (RunApp).
	AccessA2A
	// AccessSchedule: any principal here; the handler finds the schedule
	// (or reads the one to create) and checks that the principal may act
	// as its owner, answering PermissionDenied alike for a schedule that
	// is missing and one that is someone else's.
	AccessSchedule

	// AccessAdmin: admins only, as a method without an entry, but said
	// (ListUsers, which lists every user of an app).
	AccessAdmin
)

// MethodAccess is the access rule of every method the server registers,
// by full method name. A method without an entry is refused to everyone
// but admins (fail closed), and TestMethodAccessCoversEveryRPC fails: a
// service added to Register needs its entries here.
func MethodAccess() map[string]Access {
	m := map[string]Access{
		servicev1.SessionService_CreateSession_FullMethodName:   AccessScoped,
		servicev1.SessionService_GetSession_FullMethodName:      AccessScoped,
		servicev1.SessionService_ListSessions_FullMethodName:    AccessScoped,
		servicev1.SessionService_DeleteSession_FullMethodName:   AccessScoped,
		servicev1.SessionService_AppendEvent_FullMethodName:     AccessScoped,
		servicev1.SessionService_ListEvents_FullMethodName:      AccessScoped,
		servicev1.SessionService_ListToolCalls_FullMethodName:   AccessScoped,
		servicev1.SessionService_GetStateHistory_FullMethodName: AccessScoped,
		servicev1.SessionService_ListUsers_FullMethodName:       AccessAdmin,
		// A fork into another user (new_user_id) is admin-only (scope).
		servicev1.SessionService_ForkSession_FullMethodName:   AccessScoped,
		servicev1.SessionService_RewindSession_FullMethodName: AccessScoped,

		servicev1.ArtifactService_SaveArtifact_FullMethodName:         AccessScoped,
		servicev1.ArtifactService_LoadArtifact_FullMethodName:         AccessScoped,
		servicev1.ArtifactService_ListArtifacts_FullMethodName:        AccessScoped,
		servicev1.ArtifactService_ListArtifactVersions_FullMethodName: AccessScoped,
		servicev1.ArtifactService_DeleteArtifact_FullMethodName:       AccessScoped,

		servicev1.RunnerService_Run_FullMethodName:         AccessScoped,
		servicev1.RunnerService_StartRun_FullMethodName:    AccessScoped,
		servicev1.RunnerService_ListRuns_FullMethodName:    AccessScoped,
		servicev1.RunnerService_ListApps_FullMethodName:    AccessAuthenticated,
		servicev1.RunnerService_GetRun_FullMethodName:      AccessRun,
		servicev1.RunnerService_GetRunTrace_FullMethodName: AccessRun,
		servicev1.RunnerService_CancelRun_FullMethodName:   AccessRun,
		servicev1.RunnerService_AttachRun_FullMethodName:   AccessRun,
		servicev1.RunnerService_ResumeRun_FullMethodName:   AccessRun,

		servicev1.MemoryService_SearchMemory_FullMethodName:       AccessScoped,
		servicev1.MemoryService_AddSessionToMemory_FullMethodName: AccessScoped,

		// A user's usage is that user's; an app's (no user_id) is every
		// user's, so admin-only like other listings of every user.
		servicev1.UsageService_GetUsage_FullMethodName: AccessScoped,

		// A schedule is its owner's (user_id): its owner's principal and
		// admins may create, see and delete it; listing every user's is
		// admin-only.
		servicev1.ScheduleService_CreateSchedule_FullMethodName: AccessSchedule,
		servicev1.ScheduleService_GetSchedule_FullMethodName:    AccessSchedule,
		servicev1.ScheduleService_DeleteSchedule_FullMethodName: AccessSchedule,
		servicev1.ScheduleService_PauseSchedule_FullMethodName:  AccessSchedule,
		servicev1.ScheduleService_ResumeSchedule_FullMethodName: AccessSchedule,
		servicev1.ScheduleService_ListSchedules_FullMethodName:  AccessScoped,
		servicev1.EvalService_RunEval_FullMethodName:            AccessScoped,
		servicev1.EvalService_GetEvalRun_FullMethodName:         AccessScoped,
		servicev1.EvalService_ListEvalRuns_FullMethodName:       AccessScoped,
	}
	for _, name := range A2AMethods() {
		m[name] = AccessA2A
	}
	for _, d := range []grpc.ServiceDesc{healthpb.Health_ServiceDesc} {
		for _, name := range methodNames(d) {
			m[name] = AccessOpen
		}
	}
	for _, d := range []grpc.ServiceDesc{reflectionv1.ServerReflection_ServiceDesc, reflectionv1alpha.ServerReflection_ServiceDesc} {
		for _, name := range methodNames(d) {
			m[name] = AccessAuthenticated
		}
	}
	return m
}

// methodNames lists the full names of a service's methods and streams.
func methodNames(d grpc.ServiceDesc) []string {
	var names []string
	for _, md := range d.Methods {
		names = append(names, "/"+d.ServiceName+"/"+md.MethodName)
	}
	for _, sd := range d.Streams {
		names = append(names, "/"+d.ServiceName+"/"+sd.StreamName)
	}
	return names
}

// authorizer authenticates callers and applies MethodAccess. With a nil
// config, authentication is off and every call goes through.
type authorizer struct {
	cfg   *auth.Config
	rules map[string]Access
	log   *slog.Logger
}

func newAuthorizer(cfg *auth.Config, log *slog.Logger) *authorizer {
	return &authorizer{cfg: cfg, rules: MethodAccess(), log: log}
}

type principalKey struct{}

// principalFrom returns the authenticated caller; nil when authentication
// is off.
func principalFrom(ctx context.Context) *auth.Principal {
	p, _ := ctx.Value(principalKey{}).(*auth.Principal)
	return p
}

// scopedRequest is every request of an AccessScoped method.
type scopedRequest interface {
	GetAppName() string
	GetUserId() string
}

// authenticate finds the caller of a gRPC call: by its bearer token when
// it sends one (a wrong token is refused even with a good certificate),
// else by its verified client certificate.
func (a *authorizer) authenticate(ctx context.Context) (*auth.Principal, string) {
	md, _ := metadata.FromIncomingContext(ctx)
	var chains [][]*x509.Certificate
	if pr, ok := peer.FromContext(ctx); ok {
		if ti, ok := pr.AuthInfo.(credentials.TLSInfo); ok {
			chains = ti.State.VerifiedChains
		}
	}
	return a.identify(md.Get("authorization"), chains)
}

// identify finds the caller from its authorization values and its
// verified certificate chains, for gRPC metadata and HTTP headers alike.
func (a *authorizer) identify(authorization []string, chains [][]*x509.Certificate) (*auth.Principal, string) {
	switch len(authorization) {
	case 0:
	case 1:
		scheme, token, ok := strings.Cut(authorization[0], " ")
		if !ok || !strings.EqualFold(scheme, "bearer") || token == "" {
			return nil, "authorization metadata is not \"Bearer <token>\""
		}
		if p, ok := a.cfg.ByToken(token); ok {
			return p, ""
		}
		return nil, "the bearer token matches no principal"
	default:
		return nil, "more than one authorization metadata value"
	}
	if len(chains) > 0 && len(chains[0]) > 0 {
		cert := chains[0][0]
		if p, ok := a.cfg.ByCertificate(cert); ok {
			return p, ""
		}
		return nil, "client certificate " + strings.Join(auth.CertificateIdentities(cert), ",") + " matches no principal"
	}
	return nil, "no credentials: send \"authorization: Bearer <token>\" metadata or a client certificate"
}

// admit authenticates the caller of method and applies its rule, except
// the request part of AccessScoped (see scope). It returns the context
// carrying the principal.
func (a *authorizer) admit(ctx context.Context, method string) (context.Context, error) {
	rule := a.rules[method]
	if rule == AccessOpen {
		return ctx, nil
	}
	p, reason := a.authenticate(ctx)
	if p == nil {
		return ctx, a.deny(ctx, codes.Unauthenticated, "", method, reason)
	}
	if (rule == 0 || rule == AccessAdmin) && !p.Admin {
		return ctx, a.deny(ctx, codes.PermissionDenied, p.Name, method, "the method has no access rule")
	}
	return context.WithValue(ctx, principalKey{}, p), nil
}

// scope checks a request of an AccessScoped method against the caller's
// grants, before the handler looks anything up.
func (a *authorizer) scope(ctx context.Context, method string, req any) error {
	if a.rules[method] != AccessScoped {
		return nil
	}
	p := principalFrom(ctx)
	if p.Admin {
		return nil
	}
	r, ok := req.(scopedRequest)
	switch {
	case !ok:
		return a.deny(ctx, codes.PermissionDenied, p.Name, method, "the request names no app and user")
	case r.GetUserId() == "":
		return a.deny(ctx, codes.PermissionDenied, p.Name, method, "a request for every user (no user_id) is for admins")
	case !p.MayUse(r.GetAppName(), r.GetUserId()):
		return a.deny(ctx, codes.PermissionDenied, p.Name, method, "not granted user "+strconv.Quote(r.GetUserId())+" on app "+strconv.Quote(r.GetAppName()))
	}
	if r, ok := req.(*servicev1.ForkSessionRequest); ok && r.GetNewUserId() != "" && r.GetNewUserId() != r.GetUserId() {
		return a.deny(ctx, codes.PermissionDenied, p.Name, method, "a fork into another user (new_user_id) is for admins")
	}
	if key, ok := appStateKey(req); ok {
		// app: state is shared by every user of the app: setting it from a
		// client would write into other users' sessions.
		return a.deny(ctx, codes.PermissionDenied, p.Name, method, "state key "+strconv.Quote(key)+" is shared by every user of the app; only an admin may set it from a client")
	}
	return nil
}

// appStateKey returns an app:-scoped key of the state a request sets, if
// any: the initial state of a session, an appended event's state delta, a
// run's state delta.
func appStateKey(req any) (string, bool) {
	var st *structpb.Struct
	switch r := req.(type) {
	case *servicev1.CreateSessionRequest:
		st = r.GetState()
	case *servicev1.AppendEventRequest:
		st = r.GetEvent().GetActions().GetStateDelta()
	case *servicev1.RunRequest:
		st = r.GetStateDelta()
	case *servicev1.StartRunRequest:
		st = r.GetStateDelta()
	}
	for k := range st.GetFields() {
		if strings.HasPrefix(k, store.AppPrefix) {
			return k, true
		}
	}
	return "", false
}

// deny logs a refused call once, with the principal, the method and why,
// and returns its status. Tokens and request contents are never logged;
// the client gets the same reason.
func (a *authorizer) deny(ctx context.Context, code codes.Code, principal, method, reason string) error {
	a.log.LogAttrs(ctx, slog.LevelWarn, "access denied",
		slog.String("principal", principal),
		slog.String("method", method),
		slog.String("code", code.String()),
		slog.String("reason", reason))
	return status.Error(code, reason)
}

// A2AMethods are the full names of lf.a2a.v1.A2AService, which
// cmd/agentrunner registers on the grpc.Server beside ours.
func A2AMethods() []string { return methodNames(a2apb.A2AService_ServiceDesc) }

// Caller returns the principal admitted for this call (by Admit, or
// AuthenticateHTTP); nil when authentication is off.
func Caller(ctx context.Context) *auth.Principal { return principalFrom(ctx) }

// identifyHTTP finds the caller of an HTTP request as authenticate finds
// a gRPC caller's: one reading of credentials for every protocol.
func (a *authorizer) identifyHTTP(r *http.Request) (*auth.Principal, string) {
	var chains [][]*x509.Certificate
	if r.TLS != nil {
		chains = r.TLS.VerifiedChains
	}
	return a.identify(r.Header.Values("Authorization"), chains)
}

// methodOf names the RPC for logs; it is empty outside a gRPC call.
func methodOf(ctx context.Context) string {
	m, _ := grpc.Method(ctx)
	return m
}
