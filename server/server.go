package server

import (
	"cmp"
	"context"
	"iter"
	"log/slog"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/server/auth"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
)

// Store is the storage the session and artifact services call. Implemented
// by *boltstore.Store. Errors wrap the store sentinels (store.ErrNotFound,
// store.ErrAlreadyExists, store.ErrInvalidArgument, store.ErrClosed).
type Store interface {
	CreateSession(ctx context.Context, k store.SessionKey, state *structpb.Struct) (*agentrunnerv1.Session, error)
	GetSession(ctx context.Context, k store.SessionKey, opts store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error)
	ListSessions(ctx context.Context, app, user string, page store.Page) ([]*agentrunnerv1.Session, string, error)
	DeleteSession(ctx context.Context, k store.SessionKey) error
	AppendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error)
	AppendEventOnce(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, bool, error)
	ListEvents(ctx context.Context, k store.SessionKey, after store.EventFilter, page store.Page) ([]*agentrunnerv1.Event, string, error)
	// ListToolCalls returns a session's tool-call ledger in call order.
	ListToolCalls(ctx context.Context, k store.SessionKey) ([]*agentrunnerv1.ToolCall, error)
	// GetRun finds a stored run record by id (which app it belongs to).
	GetRun(ctx context.Context, runID string) (*agentrunnerv1.Run, error)

	SaveArtifact(ctx context.Context, k store.SessionKey, filename string, part *agentrunnerv1.Part) (*agentrunnerv1.ArtifactVersion, error)
	LoadArtifact(ctx context.Context, k store.SessionKey, filename string, version int64) (*agentrunnerv1.Part, *agentrunnerv1.ArtifactVersion, error)
	ListArtifacts(ctx context.Context, k store.SessionKey, page store.Page) ([]*agentrunnerv1.ArtifactVersion, string, error)
	ListArtifactVersions(ctx context.Context, k store.SessionKey, filename string, page store.Page) ([]*agentrunnerv1.ArtifactVersion, string, error)
	DeleteArtifact(ctx context.Context, k store.SessionKey, filename string, version int64) error
}

// AppRunner runs one app and keeps its runs. Implemented by
// *runner.Runner; the methods are documented there.
//
// Stream, Attach and Resume stream a run: its record first and last, its
// events between. An Update.Err (an *agent.AgentError) is reported in-band
// and the sequence goes on; an error element is terminal and the last.
type AppRunner interface {
	Stream(ctx context.Context, req runner.Request) iter.Seq2[runner.Update, error]
	Start(ctx context.Context, req runner.Request) (*agentrunnerv1.Run, error)
	Attach(ctx context.Context, runID string, after uint64) iter.Seq2[runner.Update, error]
	Resume(ctx context.Context, req runner.ResumeRequest) iter.Seq2[runner.Update, error]
	GetRun(ctx context.Context, runID string) (*agentrunnerv1.Run, error)
	ListRuns(ctx context.Context, userID, sessionID string, page store.Page) ([]*agentrunnerv1.Run, string, error)
	ListRunsOf(ctx context.Context, f store.RunFilter, page store.Page) ([]*agentrunnerv1.Run, string, error)
	Cancel(ctx context.Context, runID string) (*agentrunnerv1.Run, error)
	// HasLiveRun reports whether the run is pending or running in this
	// process (its record may not be stored yet).
	HasLiveRun(runID string) bool
	// RunDone is closed when the run ends in this process (at once when
	// it is not live here).
	RunDone(runID string) <-chan struct{}
}

// Apps is the set of apps the server hosts.
type Apps interface {
	// Lookup returns the runner of the named app.
	Lookup(name string) (AppRunner, bool)
	// List describes every app with its agent tree.
	List() []*agentrunnerv1.App
}

// DefaultMaxMessageBytes bounds a single request or response message. It is
// well above gRPC's 4 MiB default so that artifacts and inline blobs of a few
// megabytes fit, yet small enough that one call cannot exhaust memory.
const DefaultMaxMessageBytes = 32 << 20

// responseSlack is what a response needs besides its listed items (a
// session record's fields, a page token, framing): a page of items is
// bounded to the message limit less this.
const responseSlack = 64 << 10

// MaxItemBytes is the largest item (an event, a state, an artifact) a
// store behind a server with message limit maxMsg may keep: one that
// still fits, alone, in a response of the limit. cmd/agentrunner gives
// it to the store (boltstore.Options.MaxItemBytes).
func MaxItemBytes(maxMsg int) int {
	if maxMsg <= 0 {
		maxMsg = DefaultMaxMessageBytes
	}
	return maxMsg - responseSlack
}

// Config configures New.
type Config struct {
	// Store holds sessions, events and artifacts. Required.
	Store Store
	// Apps are the apps RunnerService serves; nil serves none.
	Apps Apps
	// Logger receives request logs and internal errors; nil means
	// slog.Default().
	Logger *slog.Logger
	// MaxRunDuration bounds one Run; zero means no limit beyond the
	// client's own deadline.
	MaxRunDuration time.Duration
	// MaxMessageBytes bounds each received and sent message; zero means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// MaxRequestBytes bounds each received message below MaxMessageBytes
	// (gRPC answers a larger one ResourceExhausted); zero or more than
	// MaxMessageBytes means MaxMessageBytes. Responses keep the message
	// limit: what the store holds must stay readable.
	MaxRequestBytes int
	// Auth turns authentication and authorization on: every call but
	// health checks needs a principal of it, which acts only as the
	// users and on the apps it is granted (see methodAccess). nil means
	// no authentication: every caller may do anything.
	Auth *auth.Config
	// Memory serves MemoryService; it should be the apps' runners' own.
	// Nil means the store's memory index when the store has one
	// (memory.Indexer, as *boltstore.Store and *pgstore.Store are);
	// else MemoryService answers FailedPrecondition.
	Memory memory.Service
	// Limits bound page sizes, the events of one GetSession and the runs
	// in progress; zero fields take their defaults.
	Limits Limits
}

// Server implements the agentrunner gRPC services.
type Server struct {
	store  Store
	apps   Apps
	memory memory.Service
	log    *slog.Logger
	maxRun time.Duration
	maxMsg int
	// maxRequest bounds received messages (Config.MaxRequestBytes).
	maxRequest int
	authz      *authorizer
	limits     Limits
	runs       *runLimiter
}

// New returns a Server. It panics if cfg.Store is nil: that is a wiring
// mistake, not a runtime condition.
func New(cfg Config) *Server {
	if cfg.Store == nil {
		panic("server.New: Config.Store is nil")
	}
	if cfg.Apps == nil {
		cfg.Apps = noApps{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if ix, ok := cfg.Store.(memory.Indexer); ok && cfg.Memory == nil {
		cfg.Memory = memory.NewIndex(ix)
	}
	limits := cfg.Limits.withDefaults(cfg.MaxMessageBytes)
	return &Server{
		store:      cfg.Store,
		apps:       cfg.Apps,
		memory:     cfg.Memory,
		log:        cfg.Logger,
		maxRun:     cfg.MaxRunDuration,
		maxMsg:     cfg.MaxMessageBytes,
		maxRequest: cmp.Or(min(max(cfg.MaxRequestBytes, 0), cfg.MaxMessageBytes), cfg.MaxMessageBytes),
		authz:      newAuthorizer(cfg.Auth, cfg.Logger),
		limits:     limits,
		runs:       newRunLimiter(limits),
	}
}

// ServiceNames returns the fully qualified names of the services Register
// adds, as health checks and reflection know them.
func ServiceNames() []string {
	return []string{
		servicev1.SessionService_ServiceDesc.ServiceName,
		servicev1.ArtifactService_ServiceDesc.ServiceName,
		servicev1.RunnerService_ServiceDesc.ServiceName,
		servicev1.MemoryService_ServiceDesc.ServiceName,
		servicev1.UsageService_ServiceDesc.ServiceName,
	}
}

// Register registers the agentrunner services on r.
func (s *Server) Register(r grpc.ServiceRegistrar) {
	servicev1.RegisterSessionServiceServer(r, sessionService{s: s})
	servicev1.RegisterArtifactServiceServer(r, artifactService{s: s})
	servicev1.RegisterRunnerServiceServer(r, runnerService{s: s})
	servicev1.RegisterMemoryServiceServer(r, memoryService{s: s})
	servicev1.RegisterUsageServiceServer(r, usageService{s: s})
}

// noApps serves no apps: every Run is NotFound and ListApps is empty.
type noApps struct{}

func (noApps) Lookup(string) (AppRunner, bool) { return nil, false }
func (noApps) List() []*agentrunnerv1.App      { return nil }
