package server

import (
	"log/slog"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/server/auth"
	"github.com/agentrunner/agentrunner/server/internal/front"
	"google.golang.org/grpc"
)

// The interfaces and limits of a server are its front desk's (package
// server/internal/front), where every protocol's calls are checked and
// admitted; they are named here for those who build a server.

// Store is the storage the services call: sessions, events, the tool-call
// ledger, run records and artifacts. Implemented by *boltstore.Store and
// *pgstore.Store. Errors wrap the store sentinels (store.ErrNotFound,
// store.ErrAlreadyExists, store.ErrInvalidArgument, store.ErrClosed).
type Store = front.Store

// AppRunner runs one app and keeps its runs: Stream, Start, Attach,
// Resume, GetRun, ListRuns, ListRunsOf, Cancel, HasLiveRun and RunDone.
// Implemented by *runner.Runner, where the methods are documented.
type AppRunner = front.AppRunner

// Apps is the set of apps the server hosts: Lookup(name) returns an app's
// runner, List describes every app with its agent tree. RunnerApps makes
// one of an *apps.Registry.
type Apps = front.Apps

// Limits bound what one call, one principal and the whole server may
// take: MaxPageSize, MaxEventsPerCall, MaxRuns, MaxRunsPerPrincipal,
// MaxParts, MaxInlineBytes and MaxArtifactBytes. A zero field takes its
// default (the Default constants below).
type Limits = front.Limits

// Defaults of Limits, and the message limit.
const (
	DefaultMaxEventsPerCall    = front.DefaultMaxEventsPerCall
	DefaultMaxRuns             = front.DefaultMaxRuns
	DefaultMaxRunsPerPrincipal = front.DefaultMaxRunsPerPrincipal
	DefaultMaxParts            = front.DefaultMaxParts
	DefaultMaxInlineBytes      = front.DefaultMaxInlineBytes
	// DefaultMaxMessageBytes bounds a single request or response message:
	// well above gRPC's 4 MiB default so that artifacts and inline blobs of
	// a few megabytes fit, yet small enough that one call cannot exhaust
	// memory.
	DefaultMaxMessageBytes = front.DefaultMaxMessageBytes
)

// MaxItemBytes is the largest item (an event, a state, an artifact) a
// store behind a server with message limit maxMsg may keep: one that
// still fits, alone, in a response of the limit. cmd/agentrunner gives
// it to the store (boltstore.Options.MaxItemBytes).
func MaxItemBytes(maxMsg int) int { return front.MaxItemBytes(maxMsg) }

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
	// users and on the apps it is granted (see front.MethodAccess). nil means
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
	// WebhookURL checks the webhook URL a StartRun names; nil refuses
	// every webhook (see front.Config.WebhookURL).
	WebhookURL func(url string) error
	// JudgeModels returns the model of the apps file that a rubric-based
	// criterion of EvalService names as its judge; nil refuses such
	// criteria.
	JudgeModels front.ModelLookup
}

// Server implements the agentrunner gRPC services, as thin adapters over
// its front desk.
type Server struct {
	desk *front.Desk
}

// New returns a Server. It panics if cfg.Store is nil: that is a wiring
// mistake, not a runtime condition.
func New(cfg Config) *Server {
	return &Server{desk: front.New(front.Config{
		Store:           cfg.Store,
		Apps:            cfg.Apps,
		Logger:          cfg.Logger,
		MaxRunDuration:  cfg.MaxRunDuration,
		MaxMessageBytes: cfg.MaxMessageBytes,
		MaxRequestBytes: cfg.MaxRequestBytes,
		Auth:            cfg.Auth,
		Memory:          cfg.Memory,
		Limits:          cfg.Limits,
		WebhookURL:      cfg.WebhookURL,
		JudgeModels:     cfg.JudgeModels,
	})}
}

// Desk returns the server's front desk, which server/a2a serves the apps
// over: the same checks, limits and admission as the gRPC services.
func (s *Server) Desk() *front.Desk { return s.desk }

// Store returns the server's store.
func (s *Server) Store() Store { return s.desk.Store() }

// ClaimGate counts, against the server's limit of runs in progress
// (Limits.MaxRuns), the runs an app's runner takes from the queue of a
// store that several replicas share (runner.ClaimGate): runs admitted
// elsewhere, or earlier, that run here. cmd/agentrunner sets it on every
// app's runner.
func (s *Server) ClaimGate() runner.ClaimGate { return s.desk.ClaimGate() }

// ServiceNames returns the fully qualified names of the services Register
// adds, as health checks and reflection know them.
func ServiceNames() []string {
	return []string{
		servicev1.SessionService_ServiceDesc.ServiceName,
		servicev1.ArtifactService_ServiceDesc.ServiceName,
		servicev1.RunnerService_ServiceDesc.ServiceName,
		servicev1.MemoryService_ServiceDesc.ServiceName,
		servicev1.UsageService_ServiceDesc.ServiceName,
		servicev1.ScheduleService_ServiceDesc.ServiceName,
		servicev1.EvalService_ServiceDesc.ServiceName,
	}
}

// Register registers the agentrunner services on r.
func (s *Server) Register(r grpc.ServiceRegistrar) {
	servicev1.RegisterSessionServiceServer(r, sessionService{Desk: s.desk})
	servicev1.RegisterArtifactServiceServer(r, artifactService{Desk: s.desk})
	servicev1.RegisterRunnerServiceServer(r, runnerService{Desk: s.desk})
	servicev1.RegisterMemoryServiceServer(r, memoryService{Desk: s.desk})
	servicev1.RegisterUsageServiceServer(r, usageService{Desk: s.desk})
	servicev1.RegisterScheduleServiceServer(r, scheduleService{Desk: s.desk})
	servicev1.RegisterEvalServiceServer(r, evalService{Desk: s.desk})
}
