package runner

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/budget"
	"github.com/agentrunner/agentrunner/runner/internal/replica"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/store"
)

// DefaultMaxLLMCalls is the LLM call limit of a run whose max_llm_calls is
// zero.
const DefaultMaxLLMCalls = 500

// DefaultHistoryEvents is how many of a session's most recent events a run
// reads first when Config.HistoryEvents is zero.
const DefaultHistoryEvents = 1000

// DefaultHistoryCacheEvents bounds the events a Runner keeps in memory
// between runs when Config.HistoryCacheEvents is zero.
const DefaultHistoryCacheEvents = 50_000

// DefaultHistoryCacheBytes bounds the encoded size of those events when
// Config.HistoryCacheBytes is zero: a count alone lets a few sessions of
// large events (images, documents, tool results) fill the heap.
const DefaultHistoryCacheBytes = 64 << 20

// DefaultPluginCloseTimeout bounds Close when Config.PluginCloseTimeout is
// zero.
const DefaultPluginCloseTimeout = 5 * time.Second

// DefaultLeaseTTL is how long a session lease lasts without a heartbeat
// when Config.LeaseTTL is zero: how long a dead replica's sessions stay
// closed to the others.
const DefaultLeaseTTL = 30 * time.Second

// ErrAppUnavailable is a run refused because its app cannot run (see
// Config.Unavailable); the error's text says what to set.
var ErrAppUnavailable = errors.New("app unavailable")

// Store is the storage a Runner needs. Implemented by *boltstore.Store (one
// process) and *pgstore.Store (replicas; see package replica).
type Store interface {
	// GetSession returns the session with merged state and its events,
	// oldest first; ErrNotFound when it does not exist.
	GetSession(ctx context.Context, k store.SessionKey, opts store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error)
	// AppendEvent durably appends a complete event, applies its state
	// delta, and returns the stored copy (sequence, id and timestamp set,
	// "temp:" keys removed), an instance of its own.
	AppendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error)
	// The artifact methods back the agents' Artifacts views.
	agent.ArtifactStore
	// Run records (see store.RunStore).
	store.RunStore
	// ListEvents pages through a session's events; attachers replay runs
	// with it.
	ListEvents(ctx context.Context, k store.SessionKey, after store.EventFilter, page store.Page) ([]*agentrunnerv1.Event, string, error)
	// ListToolCalls returns the session's tool-call ledger; a resumed run
	// reads it to find the calls a crash left in doubt.
	ListToolCalls(ctx context.Context, k store.SessionKey) ([]*agentrunnerv1.ToolCall, error)
}

// Config configures a Runner.
type Config struct {
	// AppName names the app; sessions are addressed within it. Required.
	AppName string
	// Description says what the app does, for ListApps.
	Description string
	// Unavailable says why the app cannot run, empty when it can: a model
	// it uses has no credentials. Its runs are refused with
	// ErrAppUnavailable, and ListApps shows the reason.
	Unavailable string
	// Root is the root of the app's agent tree; it answers new sessions.
	// Required.
	Root agent.Agent
	// ConfigVersion names this config of the app (package apps hashes
	// the app's entry in the apps file): every run record says the
	// version it ran on (Run.config_version), and ListApps the current
	// one. Empty names none. See Reconfigure.
	ConfigVersion string
	// Webhook is where the app's runs call back when they stop, unless
	// their Request names one (Request.Webhook); nil calls nowhere.
	Webhook *agentrunnerv1.Webhook
	// Store holds sessions, events and artifacts. Required.
	Store Store
	// Memory backs InvocationContext.Memory; nil means no memory (searches
	// find nothing).
	Memory memory.Service
	// AddSessionsToMemory adds a run's session to Memory once the run
	// stored its first complete event; the session stays in memory, so
	// that every later event is indexed as it is stored. A failure is
	// logged and the run goes on.
	AddSessionsToMemory bool
	// Plugins see every run, agent, model and tool step, in this order and
	// before the agents' own callbacks (see package plugin).
	Plugins []plugin.Plugin
	// PluginCloseTimeout bounds how long Close waits for the plugins; zero
	// means DefaultPluginCloseTimeout.
	PluginCloseTimeout time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// NewID returns a fresh unique id for invocations and events; nil means
	// a random one.
	NewID func() string
	// Logger receives diagnostics (recovered panics); nil discards them.
	// Runs are logged by plugin.Logging, when it is among the plugins.
	Logger *slog.Logger
	// HistoryEvents is how many of a session's most recent events a run
	// reads first when its session is not cached. A run always loads every
	// event after the session's newest compaction (see Compaction): when
	// those recent events do not reach back that far, it reads the rest.
	// Zero means DefaultHistoryEvents; negative reads everything at once.
	HistoryEvents int
	// HistoryCacheEvents bounds the recent events kept in memory between
	// runs (over all sessions), so that a run reads only what was appended
	// since the last one. Zero means DefaultHistoryCacheEvents; negative
	// turns the cache off.
	HistoryCacheEvents int
	// HistoryCacheBytes bounds the encoded size of those events too. Zero
	// means DefaultHistoryCacheBytes; negative turns the cache off.
	HistoryCacheBytes int
	// Compaction condenses long sessions' older events into summaries
	// (see Compaction); the zero value compacts nothing.
	Compaction Compaction
	// Budgets cap what the app's runs spend (see Budgets); the zero
	// value caps nothing. Daily budgets need a Store that keeps the days'
	// spend (store.SpendStore, as every store of this module does).
	Budgets Budgets
	// Replica names this process among the replicas that share Store,
	// when Store hands out session leases (store.SessionLeaser): every
	// execution of a run holds its session's lease, named after the run
	// and the replica. Empty means a random name.
	Replica string
	// LeaseTTL is how long a session lease lasts without a heartbeat:
	// how long the sessions of a replica that died stay closed to the
	// others. Zero means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// LeaseHeartbeat is how often a running execution renews its lease.
	// Zero means a third of LeaseTTL.
	LeaseHeartbeat time.Duration
	// RecoverEvery is how often the runner, on a store that hands out
	// session leases, does again what Recover does at start, for the runs
	// of replicas that died: pending runs a dead replica took from the
	// store's queue and never started go back there, and queues nobody
	// took are swept. It runs from New until Shutdown or Close. Zero
	// means LeaseTTL (the time after which a dead replica's sessions are
	// free); negative turns it off. A store of one process has no such
	// loop: while the process lives, nobody else leaves runs behind.
	RecoverEvery time.Duration
}

// Runner runs one app's agent tree over its sessions. It is safe for
// concurrent use.
type Runner struct {
	appName string
	// configs holds the app's config versions: the current one, which new
	// runs take, and every one that runs may still go on with (see
	// Reconfigure).
	configs struct {
		sync.Mutex // guards byVersion and orders stores to cur
		cur        atomic.Pointer[appConfig]
		byVersion  map[string]*appConfig
	}
	store        Store
	plugins      *plugin.Manager
	closeTimeout time.Duration
	now          func() time.Time
	newID        func() string
	newRunID     func() string
	log          *slog.Logger
	runs         runs
	// replicas is what this process can do with its store among other
	// replicas (package replica): capabilities chosen once, here, from
	// what the store can do; an absent one is nil.
	replicas replica.Set
}

// New validates the agent tree and the plugins and returns a Runner.
func New(cfg Config) (*Runner, error) {
	switch {
	case cfg.AppName == "":
		return nil, fmt.Errorf("new runner: app name is required")
	case cfg.Store == nil:
		return nil, fmt.Errorf("new runner %s: store is required", cfg.AppName)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	plugins, err := plugin.NewManager(cfg.Plugins, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("new runner %s: %w", cfg.AppName, err)
	}
	r := &Runner{
		appName:      cfg.AppName,
		store:        cfg.Store,
		plugins:      plugins,
		closeTimeout: cfg.PluginCloseTimeout,
		now:          cfg.Now,
		newID:        cfg.NewID,
		log:          cfg.Logger,
		runs:         runs{sessions: make(map[store.SessionKey]*sessionRuns), byID: make(map[string]*liveRun)},
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.newRunID = func() string { return "e-" + r.newID() }
	if r.newID == nil {
		r.newID = rand.Text
		r.newRunID = func() string { return newRunID(r.now()) }
	}
	if r.closeTimeout <= 0 {
		r.closeTimeout = DefaultPluginCloseTimeout
	}
	c, err := r.newAppConfig(cfg, newHistory(cfg))
	if err != nil {
		return nil, err
	}
	r.configs.byVersion = map[string]*appConfig{c.version: c}
	r.configs.cur.Store(c)
	r.replicas = replica.New(replica.Config{
		AppName: cfg.AppName, Store: cfg.Store, Replica: cfg.Replica,
		LeaseTTL: cmp.Or(cfg.LeaseTTL, DefaultLeaseTTL), LeaseHeartbeat: cfg.LeaseHeartbeat, RecoverEvery: cfg.RecoverEvery,
		Logger: r.log, Now: r.now,
	}, host{r}, r.Recover)
	r.replicas.Start()
	return r, nil
}

// AppName returns the name of the app the runner serves.
func (r *Runner) AppName() string { return r.appName }

// Root returns the root agent.
func (r *Runner) Root() agent.Agent { return r.config().tree.Root() }

// Info describes the app and its agent tree.
func (r *Runner) Info() *agentrunnerv1.App {
	c := r.config()
	info := &agentrunnerv1.App{Name: r.appName, Description: c.description, RootAgent: c.tree.Info(c.tree.Root()),
		UnavailableReason: c.unavailable, ConfigVersion: c.version}
	if b := c.env.Budgets; b.Any() {
		limit := func(l budget.Limit) *agentrunnerv1.BudgetLimit {
			if l == (budget.Limit{}) {
				return nil
			}
			return &agentrunnerv1.BudgetLimit{Tokens: l.Tokens, Cost: float64(l.Micros) / 1e6}
		}
		info.Budgets = &agentrunnerv1.BudgetsConfig{Run: limit(b.Run), Session: limit(b.Session), UserDaily: limit(b.UserDaily), AppDaily: limit(b.AppDaily)}
	}
	info.Currency = c.env.Budgets.Currency
	return info
}

// Close closes the plugins that hold resources, waiting at most the
// configured PluginCloseTimeout (or until ctx is done). Runs must have
// ended.
func (r *Runner) Close(ctx context.Context) error {
	r.replicas.Stop()
	ctx, cancel := context.WithTimeout(ctx, r.closeTimeout)
	defer cancel()
	return r.plugins.Close(ctx)
}

// runIDEncoding is base32 with the digits first (RFC 4648 "base32hex"):
// it keeps byte order, so that ids encoding a time sort by it, and uses
// the characters of rand.Text, which scripts match run ids with.
var runIDEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

// newRunID returns "e-" and 26 characters: the creation time in
// milliseconds (48 bits) and 80 random bits. Ids of runs created in
// order sort in order, so the store's index of run ids grows at its end
// instead of dirtying a random page of it with every run.
func newRunID(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails (Go 1.24)
	return "e-" + runIDEncoding.EncodeToString(b[:])
}

// SetClaimGate makes g decide whether this runner takes a queued run from
// a store that several replicas share, and count the pending runs Recover
// starts on a store of one process; nil lets it take every run it can,
// uncounted. It may be called while runs go on: a claim already made
// keeps its room. Set it before Recover, as serve does.
func (r *Runner) SetClaimGate(g ClaimGate) { r.replicas.Claims.Set(gateOf(g)) }
