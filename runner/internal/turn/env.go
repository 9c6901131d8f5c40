package turn

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/budget"
	"github.com/agentrunner/agentrunner/runner/internal/history"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/types/known/structpb"
)

// Store is what a turn asks of the storage, and no more: the session
// as a turn loads it (history), its events and tool-call ledger as a
// resume reads them, the writes of the run's journal, the run records
// it reads and ends, and the artifacts its agents use. The runner's
// store is a wider one.
type Store interface {
	history.Loader
	agent.ArtifactStore
	ListEvents(ctx context.Context, k store.SessionKey, after store.EventFilter, page store.Page) ([]*agentrunnerv1.Event, string, error)
	ListToolCalls(ctx context.Context, k store.SessionKey) ([]*agentrunnerv1.ToolCall, error)
	journalStore
	GetRun(ctx context.Context, runID string) (*agentrunnerv1.Run, error)
	PutRun(ctx context.Context, run *agentrunnerv1.Run) error
}

// Env is what turns work with: the app's and the process's, the same for
// every run of a runner.
type Env struct {
	Store       Store
	Tree        *agent.Tree
	Plugins     *plugin.Manager
	Memory      memory.Service // nil: no memory
	AddToMemory bool           // add each run's session to Memory
	History     *history.Cache
	Compaction  Compaction
	// MaxLLMCalls is the LLM call limit of a run whose max_llm_calls is
	// zero (runner.DefaultMaxLLMCalls).
	MaxLLMCalls int64
	// Budgets cap what the runs spend; Spend reads the days' spend for
	// the daily ones (the store).
	Budgets budget.Budgets
	Spend   budget.Reader
	Now     func() time.Time
	NewID   func() string
	Log     *slog.Logger
}

// Sink is where a turn's results go: the live run, which its readers
// follow. Only the turn's goroutine calls it while the turn runs.
type Sink interface {
	// Commit moves the record past an event the turn stored and hands
	// the event to the run's readers (attachOnly: to attachers only, the
	// user's event when the stream that started the run did not ask for
	// it); Stored only moves the record.
	Commit(ev *agentrunnerv1.Event, attachOnly bool)
	Stored(ev *agentrunnerv1.Event)
	// PublishEvent and PublishErr hand a partial event or an in-band
	// error to the run's readers.
	PublishEvent(ev *agentrunnerv1.Event)
	PublishErr(err error)
	// Live is the record itself, which only the turn changes (through
	// Stored); Record a copy of it.
	Live() *agentrunnerv1.Run
	Record() *agentrunnerv1.Run
	// Unrecorded says the run's final record could not be stored.
	Unrecorded(err error)
}

// Job is one execution of a run, as the runner admitted it.
type Job struct {
	ID  string
	Key store.SessionKey
	// Message, StateDelta and Config are a new run's request.
	Message    *agentrunnerv1.Content
	StateDelta *structpb.Struct
	Config     *agentrunnerv1.RunConfig
	// Resume is set when the execution continues a run (ResumeRun).
	Resume *Resume
	// Persisted: the record was stored before the run started (a queued
	// or resumed run), so that its end must be stored too.
	Persisted bool
}

// Resume is what a resumed run goes on with.
type Resume struct {
	// Answers and RetryCallIDs are as in runner.ResumeRequest.
	Answers      *agentrunnerv1.Content
	RetryCallIDs []string
	// From is the status the run had; LastSeq and FirstSeq its stored
	// events' range then; Config its run config.
	From              agentrunnerv1.RunStatus
	FirstSeq, LastSeq uint64
	Config            *agentrunnerv1.RunConfig
	// Stored is the run's record as it was stored: what it spent so
	// far, which its budgets count before it goes on.
	Stored *agentrunnerv1.Run
}

// Prepared is a run ready to execute: its session loaded, the request
// checked against it, the agent picked.
type Prepared struct {
	sess  *agentrunnerv1.Session
	first agent.Agent
	inv   *agent.Invocation
	// For a resumed run: it waits on calls nobody answered (it ends
	// INPUT_REQUIRED at once), or it had answered its user already.
	waits, answered bool
	// waiting is the session's run that waits on the caller, which this
	// run's message answers or supersedes (see waiting.go).
	waiting *waitingRun
}

// runConfig returns cfg, or the defaults for nil.
func runConfig(cfg *agentrunnerv1.RunConfig) *agentrunnerv1.RunConfig {
	if cfg == nil {
		return &agentrunnerv1.RunConfig{}
	}
	return cfg
}

// maxLLMCalls returns the effective limit, def for zero; negative means
// none.
func maxLLMCalls(cfg *agentrunnerv1.RunConfig, def int64) int64 {
	switch n := cfg.GetMaxLlmCalls(); {
	case n == 0:
		return def
	case n < 0:
		return -1
	default:
		return int64(n)
	}
}

// newInvocation starts the session view of a run.
func (env *Env) newInvocation(key store.SessionKey, id string, sess *agentrunnerv1.Session, events []*agentrunnerv1.Event, cfg *agentrunnerv1.RunConfig, retry []string) *agent.Invocation {
	var hooks agent.Hooks
	if env.Plugins.Len() > 0 {
		hooks = env.Plugins
	}
	state := make(map[string]*structpb.Value, len(sess.GetState().GetFields()))
	for k, v := range sess.GetState().GetFields() {
		state[k] = v
	}
	return agent.NewInvocation(agent.InvocationConfig{
		Session:     key,
		ID:          id,
		RunConfig:   runConfig(cfg),
		MaxLLMCalls: maxLLMCalls(cfg, env.MaxLLMCalls),
		State:       state,
		Events:      events,
		Tree:        env.Tree,
		Artifacts:   env.Store,
		Memory:      env.Memory,
		Hooks:       hooks,
		NewID:       env.NewID,
		Logger:      env.Log,
		Now:         env.Now,
		RetryCalls:  retry,
	})
}

// ValidateMessage checks a user message: present, with parts that all
// carry data.
func ValidateMessage(c *agentrunnerv1.Content) error {
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
