package front

import (
	"cmp"
	"context"
	"iter"
	"log/slog"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/server/auth"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/types/known/structpb"
)

// Store is the storage the desk serves sessions, events and artifacts
// from. Implemented by *boltstore.Store and *pgstore.Store. Errors wrap
// the store sentinels (store.ErrNotFound, store.ErrAlreadyExists,
// store.ErrInvalidArgument, store.ErrClosed).
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

// Apps is the set of apps the desk admits runs of.
type Apps interface {
	// Lookup returns the runner of the named app.
	Lookup(name string) (AppRunner, bool)
	// List describes every app with its agent tree.
	List() []*agentrunnerv1.App
}

// Config configures New; server.Config documents each field.
type Config struct {
	Store           Store
	Apps            Apps
	Logger          *slog.Logger
	MaxRunDuration  time.Duration
	MaxMessageBytes int
	MaxRequestBytes int
	Auth            *auth.Config
	Memory          memory.Service
	Limits          Limits
	// WebhookURL checks the webhook URL a StartRun names (the server's
	// allow list of hosts, runner/webhook.Allow.Check); nil refuses every
	// webhook: the server calls none.
	WebhookURL  func(url string) error
	JudgeModels ModelLookup
}

// Desk is the front desk: every check a call passes before it reaches
// the store or a runner, and the calls themselves, for every protocol.
// The gRPC services (package server) and A2A (package server/a2a) are
// thin adapters over it: a method takes the API's request message and
// answers its response, or a run's updates, with errors as gRPC
// statuses (StatusOf reads them for another protocol).
type Desk struct {
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
	webhookURL func(url string) error
	judges     ModelLookup
}

// New returns a Desk. It panics if cfg.Store is nil: that is a wiring
// mistake, not a runtime condition.
func New(cfg Config) *Desk {
	if cfg.Store == nil {
		panic("front.New: Config.Store is nil")
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
	return &Desk{
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
		webhookURL: cfg.WebhookURL,
		judges:     cfg.JudgeModels,
	}
}

// Apps returns the apps the desk admits runs of.
func (d *Desk) Apps() Apps { return d.apps }

// Store returns the desk's store (a run's events and artifacts, for A2A).
func (d *Desk) Store() Store { return d.store }

// Logger is where the desk logs refusals and internal errors.
func (d *Desk) Logger() *slog.Logger { return d.log }

// MaxPageSize is the largest page a listing returns.
func (d *Desk) MaxPageSize() int { return d.limits.MaxPageSize }

// MaxMessageBytes is the largest message the server sends or receives.
func (d *Desk) MaxMessageBytes() int { return d.maxMsg }

// MaxRequestBytes is the largest request message the server takes.
func (d *Desk) MaxRequestBytes() int { return d.maxRequest }

// noApps serves no apps: every Run is NotFound and ListApps is empty.
type noApps struct{}

func (noApps) Lookup(string) (AppRunner, bool) { return nil, false }
func (noApps) List() []*agentrunnerv1.App      { return nil }
