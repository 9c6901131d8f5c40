package agent

import (
	"context"
	"iter"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/memory"
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
	// RunConfig is the run's configuration; never nil. It is the run's
	// own copy.
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

	impl() *invocationContext
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
	// UserContent is the user message that started the run, a copy of the
	// stored one.
	UserContent() *agentrunnerv1.Content
}

// CallbackContext is what callbacks and plugin hooks run with. State
// changes and artifact saves made through it land in the event the
// callback produces (or in a state-only event when it produces none).
type CallbackContext interface {
	context.Context
	ReadonlyContext
	State() State
	Artifacts() Artifacts
	// Memory searches the user's past sessions.
	Memory() Memory

	impl() *invocationContext
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
	// All iterates over every key, in key order.
	All() iter.Seq2[string, *structpb.Value]
}

// Session is the invocation's view of its session.
type Session interface {
	AppName() string
	UserID() string
	ID() string
	// Events are the session's events visible in the caller's branch,
	// oldest first, including those this run has persisted so far.
	Events() Events
	// State is the same as the context's State.
	State() State
}

// Events is a snapshot of a session's events. Each event it returns is a
// copy the caller owns: the stored instances are never handed out, so that
// nothing an agent does to an event can change the session or what other
// agents see. Copies are made as events are read, so reading the last few
// of a long history costs only those.
type Events interface {
	// Len is the number of events.
	Len() int
	// At returns a copy of the i-th event, oldest first.
	At(i int) *agentrunnerv1.Event
	// All iterates over copies of the events, oldest first.
	All() iter.Seq[*agentrunnerv1.Event]
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

// Memory is what an agent sees of long-term memory: the user's past
// sessions of the app, the current one left out.
type Memory interface {
	// Search returns the past events that match query best (the first
	// page of memory.DefaultLimit).
	Search(ctx context.Context, query string) ([]*memory.Entry, error)
}

// RunTimes are when a run was created and when it started: their
// difference is the time it waited for its session (a run queued behind
// another, MULTITASK_STRATEGY_ENQUEUE). The runner puts them in the
// context of every invocation it runs (WithRunTimes); plugins that
// measure read them (RunTimesOf).
type RunTimes struct {
	Created, Started time.Time
}

type runTimesKey struct{}

// WithRunTimes returns ctx carrying t.
func WithRunTimes(ctx context.Context, t RunTimes) context.Context {
	return context.WithValue(ctx, runTimesKey{}, t)
}

// RunTimesOf returns the run times ctx carries, if any.
func RunTimesOf(ctx context.Context) (RunTimes, bool) {
	t, ok := ctx.Value(runTimesKey{}).(RunTimes)
	return t, ok
}
