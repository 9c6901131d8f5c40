package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// env is a real gRPC server on a loopback port, backed by a real bbolt file,
// and clients connected to it.
type env struct {
	store     *boltstore.Store
	grpc      *GRPCServer
	conn      *grpc.ClientConn
	sessions  servicev1.SessionServiceClient
	artifacts servicev1.ArtifactServiceClient
	runner    servicev1.RunnerServiceClient
	logs      *syncBuffer
	closeFn   func()
}

type envOption func(*Config)

func withApps(a Apps) envOption { return func(c *Config) { c.Apps = a } }

// withStore wraps the real store, to inject failures.
func withStore(wrap func(Store) Store) envOption {
	return func(c *Config) { c.Store = wrap(c.Store) }
}

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "agentrunner.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cfg := Config{Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	return startEnv(t, st, cfg, logs)
}

// startEnv serves cfg on a loopback port and connects clients to it. The
// server and the store close at the end of the test, or at env.close.
func startEnv(t *testing.T, st interface{ Close() error }, cfg Config, logs *syncBuffer) *env {
	t.Helper()
	g := NewGRPCServer(New(cfg))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(lis) }()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(DefaultMaxMessageBytes)))
	if err != nil {
		t.Fatal(err)
	}
	bolt, _ := st.(*boltstore.Store) // nil on another store
	e := &env{
		store:     bolt,
		grpc:      g,
		conn:      conn,
		sessions:  servicev1.NewSessionServiceClient(conn),
		artifacts: servicev1.NewArtifactServiceClient(conn),
		runner:    servicev1.NewRunnerServiceClient(conn),
		logs:      logs,
	}
	e.closeFn = sync.OnceFunc(func() {
		conn.Close()
		if err := g.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	t.Cleanup(e.closeFn)
	return e
}

// close stops the server and closes the store before the test ends.
func (e *env) close(*testing.T) { e.closeFn() }

// createSession creates app/user/id through the API.
func (e *env) createSession(t *testing.T, app, user, id string) *agentrunnerv1.Session {
	t.Helper()
	resp, err := e.sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: app, UserId: user, SessionId: id})
	if err != nil {
		t.Fatalf("CreateSession(%s/%s/%s): %v", app, user, id, err)
	}
	return resp.GetSession()
}

// wantCode checks err's code and, for InvalidArgument, that the message and
// the BadRequest detail name field.
func wantCode(t *testing.T, err error, code codes.Code, field string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("code = %v (%q), want %v", st.Code(), st.Message(), code)
	}
	if field == "" {
		return
	}
	if !strings.HasPrefix(st.Message(), field+": ") {
		t.Errorf("message %q does not start with the field %q", st.Message(), field)
	}
	var got []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				got = append(got, v.GetField())
			}
		}
	}
	if len(got) != 1 || got[0] != field {
		t.Errorf("BadRequest field violations = %q, want [%q]", got, field)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines to log
// into while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fakeApps serves the apps in the map.
type fakeApps map[string]AppRunner

func (f fakeApps) Lookup(name string) (AppRunner, bool) {
	r, ok := f[name]
	return r, ok
}

func (f fakeApps) List() []*agentrunnerv1.App {
	var apps []*agentrunnerv1.App
	for name := range f {
		apps = append(apps, &agentrunnerv1.App{Name: name, RootAgent: &agentrunnerv1.AgentInfo{Name: name + "_root"}})
	}
	return apps
}

// runFunc is an AppRunner made of a function that streams a run's events;
// it keeps no run records.
type runFunc func(ctx context.Context, req runner.Request) iter.Seq2[*agentrunnerv1.Event, error]

func (f runFunc) Stream(ctx context.Context, req runner.Request) iter.Seq2[runner.Update, error] {
	return func(yield func(runner.Update, error) bool) {
		// As the runner does: Timeout bounds the run.
		if req.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, req.Timeout)
			defer cancel()
		}
		for ev, err := range f(ctx, req) {
			var agentErr *agent.AgentError
			switch {
			case errors.As(err, &agentErr):
				if !yield(runner.Update{Err: err}, nil) {
					return
				}
			case err != nil:
				yield(runner.Update{}, err)
				return
			case !yield(runner.Update{Event: ev}, nil):
				return
			}
		}
	}
}

var errNoRecords = errors.New("runFunc keeps no run records")

func (f runFunc) Start(context.Context, runner.Request) (*agentrunnerv1.Run, error) {
	return nil, errNoRecords
}

func (f runFunc) Attach(context.Context, string, uint64) iter.Seq2[runner.Update, error] {
	return func(yield func(runner.Update, error) bool) { yield(runner.Update{}, errNoRecords) }
}

func (f runFunc) Resume(context.Context, runner.ResumeRequest) iter.Seq2[runner.Update, error] {
	return func(yield func(runner.Update, error) bool) { yield(runner.Update{}, errNoRecords) }
}

func (f runFunc) GetRun(context.Context, string) (*agentrunnerv1.Run, error) {
	return nil, errNoRecords
}

func (f runFunc) ListRunsOf(context.Context, store.RunFilter, store.Page) ([]*agentrunnerv1.Run, string, error) {
	return nil, "", errNoRecords
}

func (f runFunc) ListRuns(context.Context, string, string, store.Page) ([]*agentrunnerv1.Run, string, error) {
	return nil, "", errNoRecords
}

func (f runFunc) Cancel(context.Context, string) (*agentrunnerv1.Run, error) {
	return nil, errNoRecords
}

func (f runFunc) HasLiveRun(string) bool { return false }

func (f runFunc) RunDone(string) <-chan struct{} {
	done := make(chan struct{})
	close(done)
	return done
}

// collectRun reads a Run stream to its end and returns the responses and
// the final status.
func collectRun(t *testing.T, stream grpc.ServerStreamingClient[servicev1.RunResponse]) ([]*servicev1.RunResponse, error) {
	t.Helper()
	var out []*servicev1.RunResponse
	for {
		resp, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, resp)
	}
}

// nextEvent reads a Run stream up to its next event, past run records.
func nextEvent(stream grpc.ServerStreamingClient[servicev1.RunResponse]) (*agentrunnerv1.Event, error) {
	for {
		resp, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		if ev := resp.GetEvent(); ev != nil {
			return ev, nil
		}
	}
}

func text(s string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}
}

func statusMessage(err error) string { return status.Convert(err).Message() }
