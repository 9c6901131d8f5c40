package a2a

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/server/internal/front"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/grpc/codes"
)

// desk is what the handler needs of the front desk, where every
// protocol's calls are checked and runs admitted.
type desk interface {
	AuthorizeUser(ctx context.Context, app, user string) error
	AuthenticateHTTP(r *http.Request) (context.Context, error)
	CheckBudgets(ctx context.Context, k store.SessionKey) error
	OpenSession(ctx context.Context, k store.SessionKey) (bool, error)
	Run(ctx context.Context, req *servicev1.RunRequest) (iter.Seq2[runner.Update, error], error)
	ResumeRun(ctx context.Context, req *servicev1.ResumeRunRequest) (iter.Seq2[runner.Update, error], error)
	RunApp(ctx context.Context, runID string) (front.AppRunner, error)
	Apps() front.Apps
	Store() front.Store
	MaxPageSize() int
	MaxMessageBytes() int
	Status(ctx context.Context, err error) error
}

var _ desk = (*front.Desk)(nil)

// UserHeader names the user a call acts as: an HTTP header, or gRPC
// metadata. Without it the user is the caller's own (see Handler.userOf).
const UserHeader = "X-Agentrunner-User"

// DefaultUser is the user of calls that name none when authentication is
// off.
const DefaultUser = "a2a"

// Handler serves every app of a server as an A2A agent: it implements
// a2asrv.RequestHandler for the SDK's gRPC, JSON-RPC and REST bindings.
// The app is the request's tenant (the gRPC binding; the card's gRPC
// interface names it) or the /a2a/{app}/ path of the HTTP bindings.
type Handler struct {
	s   desk
	log *slog.Logger
}

var _ a2asrv.RequestHandler = (*Handler)(nil)

// New returns the handler of the apps of s, a server's front desk
// (server.Server.Desk); log nil means slog.Default().
func New(s *front.Desk, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	return &Handler{s: s, log: log}
}

type appKey struct{}

// withApp marks a call of the HTTP bindings with the app of its path.
func withApp(ctx context.Context, app string) context.Context {
	return context.WithValue(ctx, appKey{}, app)
}

// appOf returns the app a call is for: its path's (HTTP), else its
// tenant (gRPC). A tenant that names another app than the path is
// refused, as is an app not served here.
func (h *Handler) appOf(ctx context.Context, tenant string) (string, error) {
	app, _ := ctx.Value(appKey{}).(string)
	switch {
	case app == "":
		app = tenant
	case tenant != "" && tenant != app:
		return "", fmt.Errorf("%w: tenant %q is not the app %q of the URL", a2a.ErrInvalidParams, tenant, app)
	}
	if app == "" {
		return "", fmt.Errorf("%w: name the app as the request's tenant (the agent card's interfaces give it)", a2a.ErrInvalidParams)
	}
	if _, ok := h.s.Apps().Lookup(app); !ok {
		return "", fmt.Errorf("%w: app %q is not served here", a2a.ErrInvalidParams, app)
	}
	return app, nil
}

// userOf chooses the user a call acts as, and authorizes it: the
// X-Agentrunner-User header or metadata when the call sends one; else the
// principal's only user (users: [self] makes that its name); else the
// principal's name; else, with authentication off, DefaultUser.
func (h *Handler) userOf(ctx context.Context, app string) (string, error) {
	user := ""
	if cc, ok := a2asrv.CallContextFrom(ctx); ok {
		if v, ok := cc.ServiceParams().Get(UserHeader); ok && len(v) > 0 {
			user = strings.TrimSpace(v[0])
		}
	}
	if user == "" {
		switch p := front.Caller(ctx); {
		case p == nil:
			user = DefaultUser
		case len(p.Users) == 1 && !p.Admin:
			user = p.Users[0]
		default:
			user = p.Name
		}
	}
	if err := h.s.AuthorizeUser(ctx, app, user); err != nil {
		return "", h.fail(ctx, err)
	}
	return user, nil
}

// task returns the run of a task id, authorized as GetRun authorizes it,
// and refuses one of another app than the call's. A call that names no
// app (the SDK's gRPC client sends no tenant with SubscribeToTask) takes
// the task's: a task id names its app.
func (h *Handler) task(ctx context.Context, tenant string, id a2a.TaskID) (front.AppRunner, *agentrunnerv1.Run, error) {
	app, _ := ctx.Value(appKey{}).(string)
	if app != "" || tenant != "" {
		var err error
		if app, err = h.appOf(ctx, tenant); err != nil {
			return nil, nil, err
		}
	}
	if id == "" {
		return nil, nil, fmt.Errorf("%w: the task id is empty", a2a.ErrInvalidParams)
	}
	ar, err := h.s.RunApp(ctx, string(id))
	if err != nil {
		return nil, nil, h.fail(ctx, err)
	}
	run, err := ar.GetRun(ctx, string(id))
	if err != nil {
		return nil, nil, h.fail(ctx, h.s.Status(ctx, err))
	}
	if app != "" && run.GetAppName() != app {
		return nil, nil, fmt.Errorf("%w: task %s is not a task of %q", a2a.ErrTaskNotFound, id, app)
	}
	return ar, run, nil
}

// fail is the one place where the server's errors become the protocol's:
// each gRPC code maps to the A2A error a client branches on, with the
// server's message. Codes A2A has no error for (a busy session, a limit,
// a shutdown) keep their status for the gRPC binding and are a server
// error on the HTTP ones.
func (h *Handler) fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var ae *a2a.Error
	if errors.As(err, &ae) || isA2A(err) {
		return err
	}
	err = h.s.Status(ctx, err)
	code, msg := front.StatusOf(err)
	switch code {
	case codes.NotFound:
		return a2a.NewError(a2a.ErrTaskNotFound, msg)
	case codes.InvalidArgument:
		return a2a.NewError(a2a.ErrInvalidParams, msg)
	case codes.FailedPrecondition:
		return a2a.NewError(a2a.ErrUnsupportedOperation, msg)
	case codes.PermissionDenied:
		return a2a.NewError(a2a.ErrUnauthorized, msg)
	case codes.Unauthenticated:
		return a2a.NewError(a2a.ErrUnauthenticated, msg)
	case codes.Canceled:
		return fmt.Errorf("%w: %s", context.Canceled, msg)
	case codes.DeadlineExceeded:
		return fmt.Errorf("%w: %s", context.DeadlineExceeded, msg)
	case codes.Internal, codes.Unknown, codes.DataLoss:
		return a2a.NewError(a2a.ErrInternalError, msg)
	}
	return &statusError{a2a: a2a.NewError(a2a.ErrServerError, code.String()+": "+msg), status: err}
}

// statusError is an A2A server error that keeps its gRPC status, so the
// gRPC binding answers with the code (Aborted, ResourceExhausted,
// Unavailable) and the HTTP ones with a server error.
type statusError struct {
	a2a    *a2a.Error
	status error
}

func (e *statusError) Error() string   { return e.a2a.Error() }
func (e *statusError) Unwrap() []error { return []error{e.a2a, e.status} }

// isA2A reports whether err wraps one of the protocol's sentinels.
func isA2A(err error) bool {
	for _, s := range []error{a2a.ErrInvalidParams, a2a.ErrTaskNotFound, a2a.ErrTaskNotCancelable, a2a.ErrUnsupportedOperation,
		a2a.ErrPushNotificationNotSupported, a2a.ErrUnauthorized, a2a.ErrUnauthenticated, a2a.ErrInvalidRequest} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// newContextID names a new session: 16 random bytes, hex.
func newContextID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
