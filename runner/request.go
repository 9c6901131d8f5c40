package runner

import (
	"errors"
	"fmt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// Request is one Run: a user message sent to a session of the runner's app.
type Request struct {
	// UserID and SessionID address an existing session of the runner's app.
	UserID, SessionID string
	// NewMessage is the user's message. Its role is forced to "user".
	NewMessage *agentrunnerv1.Content
	// StateDelta is applied with the user message, before the agent runs.
	StateDelta *structpb.Struct
	// Config tunes the run; nil means defaults.
	Config *agentrunnerv1.RunConfig
}

// ErrRunInProgress is returned (wrapped, naming the invocation) when a run
// is requested on a session that already has one in progress.
var ErrRunInProgress = errors.New("a run is already in progress on this session")

// ErrMaxLLMCalls ends a run that reached its max_llm_calls limit.
var ErrMaxLLMCalls = errors.New("max LLM calls reached")

// AgentError is an error an agent produced during a run. The runner yields
// it in place of an event and the run goes on; every other error yielded by
// Runner.Run is terminal and is the last element of the sequence.
type AgentError struct {
	// Agent is the name of the agent that failed.
	Agent string
	// Err is what went wrong.
	Err error
}

func (e *AgentError) Error() string { return fmt.Sprintf("agent %s: %v", e.Agent, e.Err) }

func (e *AgentError) Unwrap() error { return e.Err }
