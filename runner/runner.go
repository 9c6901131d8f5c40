package runner

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"sync"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// DefaultMaxLLMCalls is the LLM call limit of a run whose max_llm_calls is
// zero.
const DefaultMaxLLMCalls = 500

// Store is the storage a Runner needs. Implemented by *boltstore.Store.
type Store interface {
	// GetSession returns the session with merged state and its events,
	// oldest first; ErrNotFound when it does not exist.
	GetSession(ctx context.Context, k store.SessionKey, opts store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error)
	// AppendEvent durably appends a complete event, applies its state
	// delta, and returns the stored copy (sequence, id and timestamp set,
	// "temp:" keys removed).
	AppendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error)
	// SaveArtifact stores a new version of an artifact.
	SaveArtifact(ctx context.Context, k store.SessionKey, filename string, part *agentrunnerv1.Part) (*agentrunnerv1.ArtifactVersion, error)
	// LoadArtifact returns a version of an artifact; 0 is the latest.
	LoadArtifact(ctx context.Context, k store.SessionKey, filename string, version int64) (*agentrunnerv1.Part, *agentrunnerv1.ArtifactVersion, error)
	// ListArtifacts lists the latest version of every artifact visible in
	// the session.
	ListArtifacts(ctx context.Context, k store.SessionKey, page store.Page) ([]*agentrunnerv1.ArtifactVersion, string, error)
}

// Config configures a Runner.
type Config struct {
	// AppName names the app; sessions are addressed within it. Required.
	AppName string
	// Root is the root of the app's agent tree; it answers new sessions.
	// Required.
	Root Agent
	// Store holds sessions, events and artifacts. Required.
	Store Store
	// Memory backs InvocationContext.Memory; nil means no memory (searches
	// find nothing).
	Memory MemoryService
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// NewID returns a fresh unique id for invocations and events; nil means
	// a random one.
	NewID func() string
	// Logger receives run diagnostics; nil discards them.
	Logger *slog.Logger
	// HistoryEvents is how many of a session's most recent events a run
	// loads: agent selection walks them and LLM agents build their
	// requests from them. Zero means DefaultHistoryEvents; negative means
	// every event, however long the session.
	HistoryEvents int
	// HistoryCacheEvents bounds the recent events kept in memory between
	// runs (over all sessions), so that a run reads only what was appended
	// since the last one. Zero means DefaultHistoryCacheEvents; negative
	// turns the cache off.
	HistoryCacheEvents int
}

// Runner runs one app's agent tree over its sessions. It is safe for
// concurrent use.
type Runner struct {
	appName     string
	description string
	tree        *tree
	store       Store
	memory      MemoryService
	now         func() time.Time
	newID       func() string
	log         *slog.Logger
	active      activeRuns
	history     *history
}

// New validates the agent tree and returns a Runner.
func New(cfg Config) (*Runner, error) {
	switch {
	case cfg.AppName == "":
		return nil, fmt.Errorf("new runner: app name is required")
	case cfg.Store == nil:
		return nil, fmt.Errorf("new runner %s: store is required", cfg.AppName)
	}
	t, err := newTree(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("new runner %s: %w", cfg.AppName, err)
	}
	r := &Runner{
		appName: cfg.AppName,
		tree:    t,
		store:   cfg.Store,
		memory:  cfg.Memory,
		now:     cfg.Now,
		newID:   cfg.NewID,
		log:     cfg.Logger,
		active:  activeRuns{runs: make(map[store.SessionKey]string)},
		history: newHistory(cfg.HistoryEvents, cfg.HistoryCacheEvents),
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.newID == nil {
		r.newID = rand.Text
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	return r, nil
}

// AppName returns the name of the app the runner serves.
func (r *Runner) AppName() string { return r.appName }

// Root returns the root agent.
func (r *Runner) Root() Agent { return r.tree.root }

// Info describes the app and its agent tree.
func (r *Runner) Info() *agentrunnerv1.App {
	return &agentrunnerv1.App{Name: r.appName, Description: r.description, RootAgent: agentInfo(r.tree, r.tree.root)}
}

// errStopped tells run's callers that the consumer stopped reading.
var errStopped = errors.New("consumer stopped")

// Run runs one invocation: it appends req.NewMessage to the session, runs
// the agent the selection rules pick (and the agents it transfers to), and
// streams the events.
//
// Complete events are yielded after they are persisted, with their sequence
// set; the agent does not go on until then. Partial events are yielded
// without being stored. The stored user event is yielded first only when
// req.Config.stream_user_event is set. An error that errors.As to
// *AgentError is delivered in place of an event and the run goes on. Any
// other error is terminal and the last element: it wraps store.ErrNotFound
// for a missing session, store.ErrInvalidArgument for an invalid request,
// ErrRunInProgress when the session has a run in progress, ErrMaxLLMCalls
// when the LLM call limit is reached, or the context's error when ctx ends.
//
// Stopping the iteration early cancels the agents and releases the
// session. The sequence is single-use.
func (r *Runner) Run(ctx context.Context, req Request) iter.Seq2[*agentrunnerv1.Event, error] {
	return func(yield func(*agentrunnerv1.Event, error) bool) {
		if err := r.run(ctx, req, yield); err != nil && !errors.Is(err, errStopped) {
			yield(nil, err)
		}
	}
}

func (r *Runner) run(ctx context.Context, req Request, yield func(*agentrunnerv1.Event, error) bool) error {
	key := store.SessionKey{App: r.appName, User: req.UserID, Session: req.SessionID}
	if err := key.Validate(); err != nil {
		return err
	}
	if err := validateMessage(req.NewMessage); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	invID := "e-" + r.newID()
	release, err := r.active.acquire(key, invID)
	if err != nil {
		return err
	}
	defer release()
	// Whatever ends the run, agents still working in goroutines (parallel
	// branches) see their context cancelled.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	sess, events, err := r.history.load(ctx, r.store, key)
	if err != nil {
		return fmt.Errorf("load session: %w", err)
	}
	agent := r.tree.selectAgent(events, req.NewMessage)
	start := r.now()
	log := r.log.With("app", key.App, "user", key.User, "session", key.Session, "invocation", invID)
	log.DebugContext(ctx, "run started", "agent", agent.Name())

	inv := &invocation{
		r:           r,
		key:         key,
		id:          invID,
		config:      runConfig(req.Config),
		state:       maps.Clone(sess.GetState().GetFields()),
		events:      events,
		maxLLMCalls: maxLLMCalls(req.Config),
	}
	if inv.state == nil {
		inv.state = make(map[string]*structpb.Value)
	}
	// However the run ends, what it stored is the next run's starting
	// point (see history).
	defer func() {
		inv.mu.RLock()
		events := inv.events
		inv.mu.RUnlock()
		r.history.put(key, sess, events)
	}()

	userEv, err := r.userEvent(ctx, inv, req)
	if err != nil {
		return err
	}
	stored, err := r.store.AppendEvent(ctx, key, userEv)
	if err != nil {
		return fmt.Errorf("append user event: %w", err)
	}
	inv.applyDelta(req.StateDelta) // with "temp:" keys, which the store dropped
	inv.addEvent(stored)
	inv.userContent = stored.GetContent()
	if inv.config.GetStreamUserEvent() && !yield(stored, nil) {
		return errStopped
	}

	n := 0
	for agent != nil {
		next, count, err := r.runAgent(ctx, inv, agent, log, yield)
		n += count
		if err != nil {
			if !errors.Is(err, errStopped) {
				log.InfoContext(ctx, "run failed", "agent", agent.Name(), "events", n, "err", err)
			}
			return err
		}
		agent = next
	}
	log.DebugContext(ctx, "run finished", "events", n, "duration", r.now().Sub(start))
	return nil
}

// runAgent runs one agent of the invocation to its end, persisting and
// yielding its events. It returns the agent a transfer hands over to, if
// any, and the number of events yielded.
func (r *Runner) runAgent(ctx context.Context, inv *invocation, agent Agent, log *slog.Logger, yield func(*agentrunnerv1.Event, error) bool) (next Agent, n int, err error) {
	ictx := &invocationContext{Context: ctx, inv: inv, agent: agent, pending: &pendingActions{}}
	var transfer string
	for ev, err := range agent.Run(ictx) {
		if err != nil {
			var ae *AgentError
			switch {
			case ctx.Err() != nil:
				return nil, n, fmt.Errorf("run %s: %w", inv.id, ctx.Err())
			case errors.Is(err, ErrMaxLLMCalls):
				return nil, n, err
			case !errors.As(err, &ae):
				err = &AgentError{Agent: agent.Name(), Err: err}
			}
			log.InfoContext(ctx, "agent error", "err", err)
			if !yield(nil, err) {
				return nil, n, errStopped
			}
			continue
		}
		if ev == nil {
			continue
		}
		if ev.Id == "" {
			ev.Id = r.newID()
		}
		if ev.InvocationId == "" {
			ev.InvocationId = inv.id
		}
		if ev.Timestamp == nil {
			ev.Timestamp = timestamp(r)
		}
		if !ev.Partial {
			stored, err := r.store.AppendEvent(ctx, inv.key, ev)
			if err != nil {
				if ctx.Err() != nil {
					return nil, n, fmt.Errorf("run %s: %w", inv.id, ctx.Err())
				}
				return nil, n, fmt.Errorf("append event of agent %s: %w", ev.GetAuthor(), err)
			}
			inv.applyDelta(ev.GetActions().GetStateDelta())
			inv.addEvent(stored)
			if t := ev.GetActions().GetTransferToAgent(); t != "" {
				transfer = t
			} else if ev.GetAuthor() == transfer {
				transfer = "" // the target already took over inside the run
			}
			ev = stored
		}
		n++
		if !yield(ev, nil) {
			return nil, n, errStopped
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, n, fmt.Errorf("run %s: %w", inv.id, err)
	}
	if transfer == "" || inv.ended.Load() {
		return nil, n, nil
	}
	target, ok := r.tree.find(transfer)
	if !ok {
		err := &AgentError{Agent: agent.Name(), Err: fmt.Errorf("transfer to unknown agent %q", transfer)}
		if !yield(nil, err) {
			return nil, n, errStopped
		}
		return nil, n, nil
	}
	log.DebugContext(ctx, "transfer", "from", agent.Name(), "to", target.Name())
	return target, n, nil
}

// userEvent builds the event of the user's message: role "user", inline
// blobs saved as artifacts and replaced by placeholders when the run asks
// for it, and the request's state delta.
func (r *Runner) userEvent(ctx context.Context, inv *invocation, req Request) (*agentrunnerv1.Event, error) {
	content := proto.CloneOf(req.NewMessage)
	content.Role = RoleUser
	ev := &agentrunnerv1.Event{
		Id:           r.newID(),
		InvocationId: inv.id,
		Author:       UserAuthor,
		Timestamp:    timestamp(r),
		Content:      content,
	}
	var actions agentrunnerv1.EventActions
	if len(req.StateDelta.GetFields()) > 0 {
		actions.StateDelta = req.StateDelta
	}
	if inv.config.GetSaveInputBlobsAsArtifacts() {
		for i, p := range content.Parts {
			blob := p.GetInlineData()
			if blob == nil {
				continue
			}
			name := blob.GetDisplayName()
			if name == "" {
				name = fmt.Sprintf("upload_%s_%d", inv.id, i)
			}
			v, err := r.store.SaveArtifact(ctx, inv.key, name, p)
			if err != nil {
				return nil, fmt.Errorf("save input blob %d as artifact %q: %w", i, name, err)
			}
			if actions.ArtifactDelta == nil {
				actions.ArtifactDelta = make(map[string]int64)
			}
			actions.ArtifactDelta[name] = v.GetVersion()
			content.Parts[i] = textPart(fmt.Sprintf("[Uploaded file saved as artifact %q version %d (%s, %d bytes)]",
				name, v.GetVersion(), blob.GetMimeType(), len(blob.GetData())))
		}
	}
	if actions.StateDelta != nil || actions.ArtifactDelta != nil {
		ev.Actions = &actions
	}
	return ev, nil
}

func timestamp(r *Runner) *timestamppb.Timestamp { return timestamppb.New(r.now()) }

// validateMessage checks the user message: present, with parts that all
// carry data.
func validateMessage(c *agentrunnerv1.Content) error {
	if len(c.GetParts()) == 0 {
		return fmt.Errorf("new_message has no parts: %w", store.ErrInvalidArgument)
	}
	for i, p := range c.Parts {
		if p.GetData() == nil {
			return fmt.Errorf("new_message part %d is empty: %w", i, store.ErrInvalidArgument)
		}
	}
	return nil
}

// runConfig returns cfg, or the defaults for nil.
func runConfig(cfg *agentrunnerv1.RunConfig) *agentrunnerv1.RunConfig {
	if cfg == nil {
		return &agentrunnerv1.RunConfig{}
	}
	return cfg
}

// maxLLMCalls returns the effective limit; negative means none.
func maxLLMCalls(cfg *agentrunnerv1.RunConfig) int64 {
	switch n := cfg.GetMaxLlmCalls(); {
	case n == 0:
		return DefaultMaxLLMCalls
	case n < 0:
		return -1
	default:
		return int64(n)
	}
}

// activeRuns tracks the sessions with a run in progress, so that runs on
// one session never interleave.
type activeRuns struct {
	mu   sync.Mutex
	runs map[store.SessionKey]string // session → invocation id
}

// acquire marks k as running invocation inv; release unmarks it.
func (a *activeRuns) acquire(k store.SessionKey, inv string) (release func(), err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur, ok := a.runs[k]; ok {
		return nil, fmt.Errorf("session %s: invocation %s: %w", k, cur, ErrRunInProgress)
	}
	a.runs[k] = inv
	return func() {
		a.mu.Lock()
		delete(a.runs, k)
		a.mu.Unlock()
	}, nil
}
