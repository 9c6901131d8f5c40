package agent

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/types/known/structpb"
)

// ArtifactStore is the artifact storage an invocation's Artifacts view
// uses. Implemented by *boltstore.Store.
type ArtifactStore interface {
	SaveArtifact(ctx context.Context, k store.SessionKey, filename string, part *agentrunnerv1.Part) (*agentrunnerv1.ArtifactVersion, error)
	LoadArtifact(ctx context.Context, k store.SessionKey, filename string, version int64) (*agentrunnerv1.Part, *agentrunnerv1.ArtifactVersion, error)
	ListArtifacts(ctx context.Context, k store.SessionKey, page store.Page) ([]*agentrunnerv1.ArtifactVersion, string, error)
}

// InvocationConfig is what the runner knows about one run when it starts.
type InvocationConfig struct {
	// Session addresses the session; ID identifies the run.
	Session store.SessionKey
	ID      string
	// RunConfig is the run's configuration; nil means defaults.
	RunConfig *agentrunnerv1.RunConfig
	// MaxLLMCalls bounds the model calls of the run; negative means none.
	MaxLLMCalls int64
	// State is the session's merged state and Events its recent events,
	// oldest first, as stored. The invocation takes both over: the caller
	// must not change them afterwards.
	State  map[string]*structpb.Value
	Events []*agentrunnerv1.Event
	// Tree is the agent tree the runner serves.
	Tree *Tree
	// Artifacts backs the Artifacts views; Memory the Memory views (nil
	// finds nothing).
	Artifacts ArtifactStore
	Memory    memory.Service
	// Hooks are the runner's plugins; nil means none.
	Hooks Hooks
	// NewID returns fresh ids (function-call ids); Logger receives
	// diagnostics. Both required.
	NewID  func() string
	Logger *slog.Logger
	// Now is the runner's clock, which the timing of model calls, tools
	// and remote turns is read from; nil means time.Now.
	Now func() time.Time
	// RetryCalls are calls of the session a resumed run runs again because
	// its caller asked: calls a crash left started and unfinished.
	RetryCalls []string
	// Replay, for a resumed run, is what its agents had done before the
	// run was cut; nil for a run that starts afresh.
	Replay *Replay
	// Budget, when set, is asked before every model call whether the run
	// may make it, given what the events recorded in this invocation
	// spent; an error (a *BudgetError) ends the invocation and is
	// delivered in band. nil allows every call.
	Budget func(ctx context.Context, spent Spent) error
	// Reserve, when set, holds what a model call may spend (est) against
	// every budget before the call, given what the events recorded in this
	// invocation spent (spent, read as the hold is decided: a call that
	// waited for another's release must see that call's event, recorded
	// before it); the hold is released by the function returned, once the
	// call's event is stored (or the call failed). An error (a
	// *BudgetError) ends the invocation, as Budget's does. nil holds
	// nothing.
	Reserve func(ctx context.Context, spent func() Spent, est Estimate) (release func(), err error)
}

// Estimate is what a model call may spend: its prompt estimate plus its
// output cap, in tokens and priced in micro-units. Uncapped: the call has
// no output cap, so it may spend any amount.
type Estimate struct {
	Tokens, Micros int64
	Uncapped       bool
}

// Spent is what model calls spent: tokens (total_token_count) and
// micro-units of money (of the calls that had a price).
type Spent struct {
	Tokens, Micros int64
}

// Invocation is the runner's side of one run: the session view every agent
// of the run shares, which the runner updates as it persists events.
// Agents never see it; they get InvocationContexts made from it.
type Invocation struct {
	cfg         InvocationConfig
	userContent *agentrunnerv1.Content
	llmCalls    atomic.Int64
	// spentTokens and spentMicros sum the usage of the events recorded:
	// parallel branches read them (countLLMCall) while the runner adds.
	spentTokens atomic.Int64
	spentMicros atomic.Int64
	ended       atomic.Bool
	hooks       Hooks
	log         *slog.Logger
	// releases gates the budget holds' releases (HoldReleases).
	releases releaseGate

	// mu guards the session view below. The runner updates it after each
	// persisted event; parallel branches read it concurrently.
	mu     sync.RWMutex
	state  map[string]*structpb.Value
	events []*agentrunnerv1.Event
}

// NewInvocation starts the view of one run.
func NewInvocation(cfg InvocationConfig) *Invocation {
	if cfg.RunConfig == nil {
		cfg.RunConfig = &agentrunnerv1.RunConfig{}
	}
	if cfg.State == nil {
		cfg.State = make(map[string]*structpb.Value)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Invocation{cfg: cfg, hooks: cfg.Hooks, log: cfg.Logger, state: cfg.State, events: cfg.Events}
}

// Context returns the context agent a runs with under ctx, at the top of
// the invocation (no branch).
func (inv *Invocation) Context(ctx context.Context, a Agent) InvocationContext {
	return &invocationContext{Context: ctx, inv: inv, agent: a, pending: &pendingActions{}}
}

// SetBudget sets the invocation's Budget (see InvocationConfig), before
// it runs.
func (inv *Invocation) SetBudget(f func(ctx context.Context, spent Spent) error) { inv.cfg.Budget = f }

// SetReserve sets the invocation's Reserve (see InvocationConfig), before
// it runs.
func (inv *Invocation) SetReserve(f func(ctx context.Context, spent func() Spent, est Estimate) (func(), error)) {
	inv.cfg.Reserve = f
}

// SetReplay sets the invocation's Replay (see InvocationConfig), before
// it runs.
func (inv *Invocation) SetReplay(r *Replay) { inv.cfg.Replay = r }

// Replay returns the invocation's Replay; nil for a run that starts
// afresh.
func (inv *Invocation) Replay() *Replay { return inv.cfg.Replay }

// SetUserContent records the stored user message the run answers.
func (inv *Invocation) SetUserContent(c *agentrunnerv1.Content) { inv.userContent = c }

// Record adds a persisted event to the view: stored is the store's copy
// (the view keeps it; nobody else may hold it), delta the state delta as
// the agent made it, "temp:" keys included, which the store drops.
func (inv *Invocation) Record(delta *structpb.Struct, stored *agentrunnerv1.Event) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	for k, v := range delta.GetFields() {
		if store.IsNull(v) {
			delete(inv.state, k)
		} else {
			inv.state[k] = v
		}
	}
	if stored != nil {
		inv.events = append(inv.events, stored)
		if u := stored.GetUsageMetadata(); u != nil {
			inv.spentTokens.Add(int64(u.GetTotalTokenCount()))
			inv.spentMicros.Add(stored.GetCost().GetMicros())
		}
	}
}

// Events returns the stored events of the view, oldest first: the ones it
// started with and those recorded since. The caller must not change them.
func (inv *Invocation) Events() []*agentrunnerv1.Event {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return inv.events
}

// Ended reports whether an agent ended the invocation.
func (inv *Invocation) Ended() bool { return inv.ended.Load() }

// countLLMCall records a model call and fails once the run's limit is
// passed, or its budget reached; a budget reached ends the invocation,
// so that workflow agents (a loop) stop too.
func (inv *Invocation) countLLMCall(ctx context.Context) error {
	n := inv.llmCalls.Add(1)
	if max := inv.cfg.MaxLLMCalls; max >= 0 && n > max {
		return fmt.Errorf("invocation %s: more than %d LLM calls: %w", inv.cfg.ID, max, ErrMaxLLMCalls)
	}
	err := inv.BudgetAllows(ctx)
	if err != nil {
		inv.ended.Store(true)
	}
	return err
}

// reserveLLMCall counts a model call as countLLMCall does and, when the
// invocation reserves, holds est against its budgets instead of only
// checking them; release ends the hold (a no-op when nothing is held).
func (inv *Invocation) reserveLLMCall(ctx context.Context, est Estimate) (release func(), err error) {
	if inv.cfg.Reserve == nil {
		return func() {}, inv.countLLMCall(ctx)
	}
	n := inv.llmCalls.Add(1)
	if max := inv.cfg.MaxLLMCalls; max >= 0 && n > max {
		return func() {}, fmt.Errorf("invocation %s: more than %d LLM calls: %w", inv.cfg.ID, max, ErrMaxLLMCalls)
	}
	held, err := inv.cfg.Reserve(ctx, inv.spent, est)
	if err != nil {
		inv.ended.Store(true)
		return func() {}, err
	}
	return func() { inv.releases.release(held) }, nil
}

// releaseGate keeps the releases of budget holds while the runner holds
// an event back, unstored (HoldReleases).
type releaseGate struct {
	mu      sync.Mutex
	gated   bool
	pending []func()
}

func (g *releaseGate) release(f func()) {
	g.mu.Lock()
	if g.gated {
		g.pending = append(g.pending, f)
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	f()
}

// HoldReleases keeps every budget hold released from now on until
// ReleaseHeld: the runner holds back an event to store it later (a final
// answer, with the run's final record), and until it is stored no total
// or ledger counts its call, which the call's hold must cover meanwhile:
// else another run (or replica) could hold what the call spent.
func (inv *Invocation) HoldReleases() {
	inv.releases.mu.Lock()
	defer inv.releases.mu.Unlock()
	inv.releases.gated = true
}

// ReleaseHeld releases the holds HoldReleases kept, once the event held
// back is stored (or will never be), and lets releases go again.
func (inv *Invocation) ReleaseHeld() {
	inv.releases.mu.Lock()
	pending := inv.releases.pending
	inv.releases.gated, inv.releases.pending = false, nil
	inv.releases.mu.Unlock()
	for _, f := range pending {
		f()
	}
}

// spent is what the events recorded in this invocation spent.
func (inv *Invocation) spent() Spent {
	return Spent{Tokens: inv.spentTokens.Load(), Micros: inv.spentMicros.Load()}
}

// BudgetAllows asks the invocation's Budget whether a model call may be
// made now, given what the events recorded spent, without counting one:
// for a call outside the agents' own (the compaction summarizer's). nil
// when no budget is set.
func (inv *Invocation) BudgetAllows(ctx context.Context) error {
	if inv.cfg.Budget == nil {
		return nil
	}
	return inv.cfg.Budget(ctx, Spent{Tokens: inv.spentTokens.Load(), Micros: inv.spentMicros.Load()})
}

func (inv *Invocation) getState(key string) (*structpb.Value, bool) {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	v, ok := inv.state[key]
	return v, ok
}

func (inv *Invocation) stateSnapshot() map[string]*structpb.Value {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return maps.Clone(inv.state)
}

// eventsIn returns the stored events visible in branch.
func (inv *Invocation) eventsIn(branch string) []*agentrunnerv1.Event {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	if branch == "" {
		// Outside branches everything is visible: share the array. Later
		// appends never write into the part this slice covers.
		return inv.events[:len(inv.events):len(inv.events)]
	}
	out := make([]*agentrunnerv1.Event, 0, len(inv.events))
	for _, ev := range inv.events {
		if visibleIn(ev.GetBranch(), branch) {
			out = append(out, ev)
		}
	}
	return out
}

// visibleIn reports whether an event of branch evBranch is visible to an
// agent running in branch. Events of the branch itself and of its ancestors
// are; a sibling branch's are not. Agents outside any branch (after a
// parallel agent ends) see every branch.
func visibleIn(evBranch, branch string) bool {
	return branch == "" || evBranch == "" || evBranch == branch || strings.HasPrefix(branch, evBranch+".")
}

// eventCopies is the Events of a session view: copies made as they are
// read.
type eventCopies []*agentrunnerv1.Event

func (e eventCopies) Len() int                      { return len(e) }
func (e eventCopies) At(i int) *agentrunnerv1.Event { return e[i].CloneVT() }
func (e eventCopies) All() iter.Seq[*agentrunnerv1.Event] {
	return func(yield func(*agentrunnerv1.Event) bool) {
		for _, ev := range e {
			if !yield(ev.CloneVT()) {
				return
			}
		}
	}
}
