package agent

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/types/known/structpb"
)

// invocationContext is the one implementation of InvocationContext and
// CallbackContext.
type invocationContext struct {
	context.Context
	inv    *Invocation
	agent  Agent
	branch string
	// pending collects the state changes and artifact saves made through
	// this context until an event carries them.
	pending *pendingActions
	// replayEscalated: a child this agent ran had escalated before the
	// run was cut (see Replay); a loop reads it with EscalatedBeforeCut.
	replayEscalated atomic.Bool
}

func (c *invocationContext) impl() *invocationContext { return c }

// forAgent returns the context agent a runs with.
func (c *invocationContext) forAgent(a Agent) *invocationContext {
	return &invocationContext{Context: c.Context, inv: c.inv, agent: a, branch: c.branch, pending: &pendingActions{}}
}

// callbackContext returns a context whose changes are kept apart from the
// agent's, for the event a group of callbacks produces.
func (c *invocationContext) callbackContext() *invocationContext {
	return &invocationContext{Context: c.Context, inv: c.inv, agent: c.agent, branch: c.branch, pending: &pendingActions{}}
}

func (c *invocationContext) Agent() Agent                        { return c.agent }
func (c *invocationContext) AgentName() string                   { return c.agent.Name() }
func (c *invocationContext) AppName() string                     { return c.inv.cfg.Session.App }
func (c *invocationContext) UserID() string                      { return c.inv.cfg.Session.User }
func (c *invocationContext) SessionID() string                   { return c.inv.cfg.Session.Session }
func (c *invocationContext) InvocationID() string                { return c.inv.cfg.ID }
func (c *invocationContext) Branch() string                      { return c.branch }
func (c *invocationContext) RunConfig() *agentrunnerv1.RunConfig { return c.inv.cfg.RunConfig }
func (c *invocationContext) Session() Session                    { return sessionView{c} }
func (c *invocationContext) State() State                        { return stateView{c} }
func (c *invocationContext) Artifacts() Artifacts                { return artifactsView{c} }
func (c *invocationContext) Memory() Memory                      { return boundMemory{c} }
func (c *invocationContext) EndInvocation()                      { c.inv.ended.Store(true) }
func (c *invocationContext) Ended() bool                         { return c.inv.ended.Load() }

func (c *invocationContext) UserContent() *agentrunnerv1.Content {
	if c.inv.userContent == nil {
		return nil
	}
	return c.inv.userContent.CloneVT()
}

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
		ev.InvocationId = c.inv.cfg.ID
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
		maps.Copy(m, s.c.pending.state)
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

func (s sessionView) AppName() string { return s.c.inv.cfg.Session.App }
func (s sessionView) UserID() string  { return s.c.inv.cfg.Session.User }
func (s sessionView) ID() string      { return s.c.inv.cfg.Session.Session }
func (s sessionView) State() State    { return stateView(s) }
func (s sessionView) Events() Events  { return eventCopies(s.c.inv.eventsIn(s.c.branch)) }

type artifactsView struct{ c *invocationContext }

func (a artifactsView) Save(ctx context.Context, filename string, part *agentrunnerv1.Part) (int64, error) {
	v, err := a.c.inv.cfg.Artifacts.SaveArtifact(ctx, a.c.inv.cfg.Session, filename, part)
	if err != nil {
		return 0, fmt.Errorf("save artifact %q: %w", filename, err)
	}
	a.c.pending.saved(filename, v.GetVersion())
	return v.GetVersion(), nil
}

func (a artifactsView) Load(ctx context.Context, filename string, version int64) (*agentrunnerv1.Part, error) {
	p, _, err := a.c.inv.cfg.Artifacts.LoadArtifact(ctx, a.c.inv.cfg.Session, filename, version)
	if err != nil {
		return nil, fmt.Errorf("load artifact %q: %w", filename, err)
	}
	return p, nil
}

func (a artifactsView) List(ctx context.Context) ([]*agentrunnerv1.ArtifactVersion, error) {
	var out []*agentrunnerv1.ArtifactVersion
	page := store.Page{Size: store.MaxPageSize}
	for {
		vs, next, err := a.c.inv.cfg.Artifacts.ListArtifacts(ctx, a.c.inv.cfg.Session, page)
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

func (m boundMemory) Search(ctx context.Context, query string) ([]*memory.Entry, error) {
	svc := m.c.inv.cfg.Memory
	if svc == nil {
		return nil, nil
	}
	k := m.c.inv.cfg.Session
	entries, _, err := svc.Search(ctx, memory.Query{App: k.App, User: k.User, Query: query, ExcludeSession: k.Session})
	return entries, err
}
