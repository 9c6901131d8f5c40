package server

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// panickyStore panics in CreateSession, as a buggy store might.
type panickyStore struct{ Store }

func (panickyStore) CreateSession(context.Context, store.SessionKey, *structpb.Struct) (*agentrunnerv1.Session, error) {
	panic("nil map write in CreateSession")
}

func TestHandlerPanicIsInternal(t *testing.T) {
	apps := fakeApps{"crashy": runFunc(func(context.Context, runner.Request) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			yield(&agentrunnerv1.Event{Author: "bot", Partial: true}, nil)
			var m map[string]int
			m["boom"]++ // a real runtime panic, not a panic(string)
		}
	})}
	e := newEnv(t, withApps(apps), withStore(func(s Store) Store { return panickyStore{s} }))

	_, err := e.sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "a", UserId: "u"})
	wantCode(t, err, codes.Internal, "")
	if m := statusMessage(err); m != "internal error" {
		t.Errorf("unary panic message = %q; the panic value must not reach the client", m)
	}

	stream, err := e.runner.Run(t.Context(), &servicev1.RunRequest{AppName: "crashy", UserId: "u", SessionId: "s", NewMessage: text("hi")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := collectRun(t, stream)
	wantCode(t, err, codes.Internal, "")
	if len(got) != 1 {
		t.Errorf("got %d responses before the panic, want 1", len(got))
	}

	// The server is still serving after both panics.
	if _, err := e.sessions.ListSessions(t.Context(), &servicev1.ListSessionsRequest{AppName: "a"}); err != nil {
		t.Errorf("ListSessions after panics: %v", err)
	}

	logs := e.logs.String()
	for _, want := range []string{
		"panic in handler", "nil map write in CreateSession", "assignment to entry in nil map",
		"goroutine", // the stack
		"method=/agentrunner.service.v1.SessionService/CreateSession code=Internal",
		"method=/agentrunner.service.v1.RunnerService/Run code=Internal",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
}

// TestRecoveryInterceptors drives the interceptors directly, without a
// network, so a broken chain cannot hide behind the handlers' own checks.
func TestRecoveryInterceptors(t *testing.T) {
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	_, err := unaryRecovery(log)(t.Context(), nil, &grpc.UnaryServerInfo{FullMethod: "/x/Unary"},
		func(context.Context, any) (any, error) { panic("unary boom") })
	wantCode(t, err, codes.Internal, "")
	err = streamRecovery(log)(nil, fakeServerStream{ctx: t.Context()}, &grpc.StreamServerInfo{FullMethod: "/x/Stream"},
		func(any, grpc.ServerStream) error { panic(errors.New("stream boom")) })
	wantCode(t, err, codes.Internal, "")
	for _, want := range []string{"unary boom", "stream boom", "/x/Unary", "/x/Stream"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	// No panic: the handler's result is returned untouched.
	resp, err := unaryRecovery(log)(t.Context(), nil, &grpc.UnaryServerInfo{},
		func(context.Context, any) (any, error) { return "ok", nil })
	if resp != "ok" || err != nil {
		t.Errorf("recovery changed a normal result: %v, %v", resp, err)
	}
}

type fakeServerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (f fakeServerStream) Context() context.Context { return f.ctx }

func TestHealthAndReflection(t *testing.T) {
	e := newEnv(t)
	hc := healthpb.NewHealthClient(e.conn)
	for _, svc := range append([]string{""}, ServiceNames()...) {
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatalf("health check %q: %v", svc, err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %q = %v, want SERVING", svc, resp.GetStatus())
		}
	}
	_, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "no.such.Service"})
	wantCode(t, err, codes.NotFound, "")

	rc, err := reflectionpb.NewServerReflectionClient(e.conn).ServerReflectionInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := rc.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range append(ServiceNames(), "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection") {
		if !slices.Contains(names, want) {
			t.Errorf("reflection lists %v, missing %s", names, want)
		}
	}
	// The descriptors resolve, which is what grpcurl describe needs.
	if err := rc.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{
		FileContainingSymbol: "agentrunner.service.v1.RunnerService",
	}}); err != nil {
		t.Fatal(err)
	}
	if resp, err := rc.Recv(); err != nil || len(resp.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
		t.Errorf("file containing RunnerService: %v, %v", resp, err)
	}
	rc.CloseSend()
}

// TestShutdown checks the order: health goes NOT_SERVING, in-flight
// streams get until the deadline, then they are cancelled and Shutdown
// reports it; Shutdown returns only after the handler has returned, so that
// the store can be closed after it.
func TestShutdown(t *testing.T) {
	testCtx := t.Context()
	inRun := make(chan struct{})
	sawCancel := make(chan struct{})
	release := make(chan struct{})
	runDone := make(chan struct{})
	apps := fakeApps{"stuck": runFunc(func(ctx context.Context, req runner.Request) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			defer close(runDone)
			close(inRun)
			select {
			case <-ctx.Done():
			case <-testCtx.Done(): // backstop: fail rather than hang
			}
			close(sawCancel)
			// Cleanup that takes a while, like persisting an abort.
			select {
			case <-release:
			case <-testCtx.Done():
			}
			yield(nil, ctx.Err())
		}
	})}
	e := newEnv(t, withApps(apps))
	stream, err := e.runner.Run(t.Context(), &servicev1.RunRequest{AppName: "stuck", UserId: "u", SessionId: "s", NewMessage: text("hi")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-inRun:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not start")
	}

	ctx, cancel := context.WithCancel(t.Context())
	shut := make(chan error, 1)
	go func() { shut <- e.grpc.Shutdown(ctx) }()

	// Poll the health server until the shutdown has reached it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := e.grpc.health.Check(t.Context(), &healthpb.HealthCheckRequest{})
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_NOT_SERVING {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health still %v, %v", resp, err)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while a stream was in flight", err)
	case <-sawCancel:
		t.Fatal("the in-flight run was cancelled before the deadline")
	default:
	}

	cancel() // the grace period is over: the stream must be cancelled
	select {
	case <-sawCancel:
	case <-time.After(10 * time.Second):
		t.Fatal("the in-flight run was not cancelled after the deadline")
	}
	// The handler is still busy; Shutdown must wait for it. A wrong
	// implementation returns at once, so a short wait catches it.
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while the Run handler was still running", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-shut; !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled after forcing", err)
	}
	select {
	case <-runDone:
	default:
		t.Error("Shutdown returned while the Run handler was still running")
	}
	if _, err := collectRun(t, stream); err == nil {
		t.Error("the forced stream ended without an error")
	}
}
