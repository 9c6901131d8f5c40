package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/types/known/structpb"
)

// InvocationContext is what an agent runs with: the run's context.Context
// (cancelled when the caller goes away) and the invocation's session, state,
// artifacts, memory and configuration. Each agent gets its own, derived from
// its parent's; it is valid for the duration of the agent's Run only.
type InvocationContext interface {
	context.Context
	ReadonlyContext

	// Agent is the agent this context was made for.
	Agent() Agent
	// RunConfig is the run's configuration; never nil.
	RunConfig() *agentrunnerv1.RunConfig
	// Session is the session as this invocation sees it.
	Session() Session
	// State reads the session state (with this run's changes and "temp:"
	// keys) and records changes: they land in the state_delta of the next
	// complete event this agent yields, or of a state-only event the agent
	// ends with.
	State() State
	// Artifacts saves and loads the session's artifacts; saves are recorded
	// in an event's artifact_delta as state changes are.
	Artifacts() Artifacts
	// Memory searches the user's past sessions.
	Memory() Memory
	// EndInvocation ends the invocation after the current event: workflow
	// agents start no further children, LLM agents make no further calls
	// and the runner follows no transfer.
	EndInvocation()
	// Ended reports whether EndInvocation was called.
	Ended() bool

	internal() *invocationContext
}

// ReadonlyContext is the identity of an invocation.
type ReadonlyContext interface {
	// AgentName is the name of the agent running.
	AgentName() string
	// AppName, UserID and SessionID address the session.
	AppName() string
	UserID() string
	SessionID() string
	// InvocationID identifies this run; every event it produces carries it.
	InvocationID() string
	// Branch is the dot-separated path of parallel branches the agent runs
	// in, empty outside parallel agents. An agent sees only the events of
	// its branch and of its ancestors' branches.
	Branch() string
	// UserContent is the user message that started the run, as stored.
	UserContent() *agentrunnerv1.Content
}

// CallbackContext is what agent and model callbacks run with. State changes
// and artifact saves made through it land in the event the callback
// produces (or in a state-only event when it produces none).
type CallbackContext interface {
	context.Context
	ReadonlyContext
	State() State
	Artifacts() Artifacts
}

// State is a view of session state. Keys prefixed "app:" and "user:" are
// shared with the app's and the user's other sessions, "temp:" keys live for
// this invocation only.
type State interface {
	// Get returns a key's value.
	Get(key string) (*structpb.Value, bool)
	// Set records a change. The value is a *structpb.Value or anything
	// structpb.NewValue accepts; nil deletes the key.
	Set(key string, value any) error
	// All iterates over every key, in no particular order.
	All() iter.Seq2[string, *structpb.Value]
}

// Session is the invocation's view of its session.
type Session interface {
	AppName() string
	UserID() string
	ID() string
	// Events returns the session's events visible in the caller's branch,
	// oldest first, including those this run has persisted so far. The
	// events are shared and must not be modified.
	Events() []*agentrunnerv1.Event
	// State is the same as the context's State.
	State() State
}

// Artifacts saves and loads the artifacts of the session. Filenames
// prefixed "user:" are shared by all of the user's sessions.
type Artifacts interface {
	// Save stores a new version and returns its number.
	Save(ctx context.Context, filename string, part *agentrunnerv1.Part) (int64, error)
	// Load returns a version; 0 is the latest. A missing artifact is an
	// error wrapping store.ErrNotFound.
	Load(ctx context.Context, filename string, version int64) (*agentrunnerv1.Part, error)
	// List returns the latest version of every artifact the session sees.
	List(ctx context.Context) ([]*agentrunnerv1.ArtifactVersion, error)
}

// invocation is the state one Run shares among all its agents.
type invocation struct {
	r           *Runner
	key         store.SessionKey
	id          string
	userContent *agentrunnerv1.Content
	config      *agentrunnerv1.RunConfig
	maxLLMCalls int64 // < 0: unlimited
	llmCalls    atomic.Int64
	ended       atomic.Bool

	// mu guards the session view below. The runner updates it after each
	// persisted event; parallel branches read it concurrently.
	mu     sync.RWMutex
	state  map[string]*structpb.Value
	events []*agentrunnerv1.Event
}

// countLLMCall records a model call and fails once the run's limit is
// passed.
func (inv *invocation) countLLMCall() error {
	n := inv.llmCalls.Add(1)
	if inv.maxLLMCalls >= 0 && n > inv.maxLLMCalls {
		return fmt.Errorf("invocation %s: more than %d LLM calls: %w", inv.id, inv.maxLLMCalls, ErrMaxLLMCalls)
	}
	return nil
}

// applyDelta applies a state delta, "temp:" keys included, to the view.
func (inv *invocation) applyDelta(delta *structpb.Struct) {
	if len(delta.GetFields()) == 0 {
		return
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	for k, v := range delta.GetFields() {
		if store.IsNull(v) {
			delete(inv.state, k)
		} else {
			inv.state[k] = v
		}
	}
}

// addEvent records a persisted event in the view.
func (inv *invocation) addEvent(ev *agentrunnerv1.Event) {
	inv.mu.Lock()
	inv.events = append(inv.events, ev)
	inv.mu.Unlock()
}

func (inv *invocation) getState(key string) (*structpb.Value, bool) {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	v, ok := inv.state[key]
	return v, ok
}

func (inv *invocation) stateSnapshot() map[string]*structpb.Value {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return maps.Clone(inv.state)
}

// eventsIn returns the events visible in branch.
func (inv *invocation) eventsIn(branch string) []*agentrunnerv1.Event {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
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

// invocationContext is the one implementation of InvocationContext and
// CallbackContext.
type invocationContext struct {
	context.Context
	inv    *invocation
	agent  Agent
	branch string
	// pending collects the state changes and artifact saves made through
	// this context until an event carries them.
	pending *pendingActions
}

func (c *invocationContext) internal() *invocationContext { return c }

// forAgent returns the context agent a runs with.
func (c *invocationContext) forAgent(a Agent) *invocationContext {
	return &invocationContext{Context: c.Context, inv: c.inv, agent: a, branch: c.branch, pending: &pendingActions{}}
}

// derive returns a copy running under ctx in branch, for parallel children.
func (c *invocationContext) derive(ctx context.Context, branch string) *invocationContext {
	return &invocationContext{Context: ctx, inv: c.inv, agent: c.agent, branch: branch, pending: &pendingActions{}}
}

// callbackContext returns a context whose changes are kept apart from the
// agent's, for the event a group of callbacks produces.
func (c *invocationContext) callbackContext() *invocationContext {
	return &invocationContext{Context: c.Context, inv: c.inv, agent: c.agent, branch: c.branch, pending: &pendingActions{}}
}

func (c *invocationContext) Agent() Agent                        { return c.agent }
func (c *invocationContext) AgentName() string                   { return c.agent.Name() }
func (c *invocationContext) AppName() string                     { return c.inv.key.App }
func (c *invocationContext) UserID() string                      { return c.inv.key.User }
func (c *invocationContext) SessionID() string                   { return c.inv.key.Session }
func (c *invocationContext) InvocationID() string                { return c.inv.id }
func (c *invocationContext) Branch() string                      { return c.branch }
func (c *invocationContext) UserContent() *agentrunnerv1.Content { return c.inv.userContent }
func (c *invocationContext) RunConfig() *agentrunnerv1.RunConfig { return c.inv.config }
func (c *invocationContext) Session() Session                    { return sessionView{c} }
func (c *invocationContext) State() State                        { return stateView{c} }
func (c *invocationContext) Artifacts() Artifacts                { return artifactsView{c} }
func (c *invocationContext) Memory() Memory                      { return boundMemory{c} }
func (c *invocationContext) EndInvocation()                      { c.inv.ended.Store(true) }
func (c *invocationContext) Ended() bool                         { return c.inv.ended.Load() }

// fill completes an event the agent yielded.
func (c *invocationContext) fill(ev *agentrunnerv1.Event) {
	if ev.Author == "" {
		if ev.GetContent().GetRole() == RoleUser {
			ev.Author = UserAuthor
		} else {
			ev.Author = c.agent.Name()
		}
	}
	if ev.Branch == "" {
		ev.Branch = c.branch
	}
	if ev.InvocationId == "" {
		ev.InvocationId = c.inv.id
	}
}

// newEvent returns an event authored by the context's agent.
func (c *invocationContext) newEvent(content *agentrunnerv1.Content) *agentrunnerv1.Event {
	ev := &agentrunnerv1.Event{Content: content}
	if content != nil && content.Role == "" {
		content.Role = RoleModel
	}
	c.fill(ev)
	return ev
}

// callbackEvent returns the event a group of callbacks produced: their
// content, if any, carrying the changes they made; nil when there is
// neither.
func (c *invocationContext) callbackEvent(content *agentrunnerv1.Content) *agentrunnerv1.Event {
	if content == nil && c.pending.empty() {
		return nil
	}
	ev := c.newEvent(content)
	c.pending.flushInto(ev)
	return ev
}

// agentError wraps an error of the running agent for in-band delivery,
// unless it must end the run: the run's context is done or the LLM call
// limit is reached.
func (c *invocationContext) agentError(err error) error {
	var ae *AgentError
	switch {
	case errors.As(err, &ae), isTerminal(c, err):
		return err
	}
	return &AgentError{Agent: c.agent.Name(), Err: err}
}

// isTerminal reports whether err, yielded by an agent, ends the run.
func isTerminal(ctx context.Context, err error) bool {
	return errors.Is(err, ErrMaxLLMCalls) || (ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)))
}

// pendingActions accumulates state changes and artifact saves until an
// event carries them. Agents may write from their own goroutines, hence the
// lock.
type pendingActions struct {
	mu        sync.Mutex
	state     map[string]*structpb.Value
	artifacts map[string]int64
}

func (p *pendingActions) empty() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.state) == 0 && len(p.artifacts) == 0
}

func (p *pendingActions) get(key string) (v *structpb.Value, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok = p.state[key]
	return v, ok
}

func (p *pendingActions) set(key string, v *structpb.Value) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		p.state = make(map[string]*structpb.Value)
	}
	p.state[key] = v
}

func (p *pendingActions) saved(filename string, version int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.artifacts == nil {
		p.artifacts = make(map[string]int64)
	}
	p.artifacts[filename] = version
}

// flushInto moves the pending changes into ev's actions. Changes the event
// already carries win over pending ones for the same key.
func (p *pendingActions) flushInto(ev *agentrunnerv1.Event) {
	p.mu.Lock()
	state, artifacts := p.state, p.artifacts
	p.state, p.artifacts = nil, nil
	p.mu.Unlock()
	if len(state) == 0 && len(artifacts) == 0 {
		return
	}
	if ev.Actions == nil {
		ev.Actions = &agentrunnerv1.EventActions{}
	}
	a := ev.Actions
	if len(state) > 0 {
		if a.StateDelta == nil {
			a.StateDelta = &structpb.Struct{}
		}
		if a.StateDelta.Fields == nil {
			a.StateDelta.Fields = make(map[string]*structpb.Value, len(state))
		}
		for k, v := range state {
			if _, ok := a.StateDelta.Fields[k]; !ok {
				a.StateDelta.Fields[k] = v
			}
		}
	}
	if len(artifacts) > 0 {
		if a.ArtifactDelta == nil {
			a.ArtifactDelta = make(map[string]int64, len(artifacts))
		}
		for k, v := range artifacts {
			if _, ok := a.ArtifactDelta[k]; !ok {
				a.ArtifactDelta[k] = v
			}
		}
	}
}

// event returns a state-only event carrying the pending changes, or nil.
func (p *pendingActions) event(c *invocationContext) *agentrunnerv1.Event {
	if p.empty() {
		return nil
	}
	ev := c.newEvent(nil)
	p.flushInto(ev)
	return ev
}

type stateView struct{ c *invocationContext }

func (s stateView) Get(key string) (*structpb.Value, bool) {
	if v, ok := s.c.pending.get(key); ok {
		if store.IsNull(v) {
			return nil, false
		}
		return v, true
	}
	return s.c.inv.getState(key)
}

func (s stateView) Set(key string, value any) error {
	if key == "" {
		return fmt.Errorf("set state: empty key: %w", store.ErrInvalidArgument)
	}
	v, err := toValue(value)
	if err != nil {
		return fmt.Errorf("set state %q: %w", key, err)
	}
	s.c.pending.set(key, v)
	return nil
}

func (s stateView) All() iter.Seq2[string, *structpb.Value] {
	return func(yield func(string, *structpb.Value) bool) {
		m := s.c.inv.stateSnapshot()
		s.c.pending.mu.Lock()
		for k, v := range s.c.pending.state {
			m[k] = v
		}
		s.c.pending.mu.Unlock()
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if v := m[k]; !store.IsNull(v) && !yield(k, v) {
				return
			}
		}
	}
}

// toValue converts a Go value for State.Set; nil becomes a JSON null, which
// deletes the key.
func toValue(v any) (*structpb.Value, error) {
	switch v := v.(type) {
	case nil:
		return structpb.NewNullValue(), nil
	case *structpb.Value:
		if v == nil {
			return structpb.NewNullValue(), nil
		}
		return v, nil
	}
	return structpb.NewValue(v)
}

type sessionView struct{ c *invocationContext }

func (s sessionView) AppName() string { return s.c.inv.key.App }
func (s sessionView) UserID() string  { return s.c.inv.key.User }
func (s sessionView) ID() string      { return s.c.inv.key.Session }
func (s sessionView) State() State    { return stateView(s) }
func (s sessionView) Events() []*agentrunnerv1.Event {
	return s.c.inv.eventsIn(s.c.branch)
}

type artifactsView struct{ c *invocationContext }

func (a artifactsView) Save(ctx context.Context, filename string, part *agentrunnerv1.Part) (int64, error) {
	v, err := a.c.inv.r.store.SaveArtifact(ctx, a.c.inv.key, filename, part)
	if err != nil {
		return 0, fmt.Errorf("save artifact %q: %w", filename, err)
	}
	a.c.pending.saved(filename, v.GetVersion())
	return v.GetVersion(), nil
}

func (a artifactsView) Load(ctx context.Context, filename string, version int64) (*agentrunnerv1.Part, error) {
	p, _, err := a.c.inv.r.store.LoadArtifact(ctx, a.c.inv.key, filename, version)
	if err != nil {
		return nil, fmt.Errorf("load artifact %q: %w", filename, err)
	}
	return p, nil
}

func (a artifactsView) List(ctx context.Context) ([]*agentrunnerv1.ArtifactVersion, error) {
	var out []*agentrunnerv1.ArtifactVersion
	page := store.Page{Size: store.MaxPageSize}
	for {
		vs, next, err := a.c.inv.r.store.ListArtifacts(ctx, a.c.inv.key, page)
		if err != nil {
			return nil, fmt.Errorf("list artifacts: %w", err)
		}
		out = append(out, vs...)
		if next == "" {
			return out, nil
		}
		page.Token = next
	}
}

type boundMemory struct{ c *invocationContext }

func (m boundMemory) Search(ctx context.Context, query string) ([]*MemoryEntry, error) {
	svc := m.c.inv.r.memory
	if svc == nil {
		return nil, nil
	}
	return svc.Search(ctx, MemoryQuery{
		App:            m.c.inv.key.App,
		User:           m.c.inv.key.User,
		Query:          query,
		ExcludeSession: m.c.inv.key.Session,
	})
}
