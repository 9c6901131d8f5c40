// Package plugin is the runner-wide seam: a Plugin sees every run, agent,
// model call and tool call of the runner it is given to, and may observe,
// replace or short-circuit each step. Telemetry, logging, guardrails and
// usage accounting are plugins, not code threaded through the loop.
//
// A plugin is any value with a Name that implements some of the hook
// interfaces below; the Manager finds them once, when it is made. Plugins
// run in the order of the runner's list, and their hooks run before the
// agent's own callbacks of the same kind. For every hook that can return
// something, the first plugin that returns a value (or an error) ends the
// chain for that step: later plugins' hooks of that kind and the agent's
// own callbacks of that kind are skipped, and the value takes effect as
// the table says. An error (or a panic, which is recovered) becomes an
// in-band *agent.AgentError wrapping an *Error that names the plugin and
// the hook: the run goes on.
//
//	hook            where                                      a returned value
//	on_user_message before the user's message is stored        replaces the message
//	before_run      after it is stored, before any agent runs  ends the run with this answer
//	on_event        before each event is yielded (a complete   replaces the event; ErrDropPartial
//	                one: before it is stored)                  drops a partial one
//	after_run       when the run ends, however it ends         -
//	before_agent    before each agent                          is its answer; the agent is skipped
//	after_agent     after each agent                           is appended as its answer
//	before_model    before each model call                     is the response; no call is made
//	after_model     after each complete model response         replaces the response
//	on_model_error  when a model call fails                    is the response instead of the error
//	before_tool     before each tool call                      is the result; the tool is not run
//	after_tool      after each tool call that succeeded        replaces the result
//	on_tool_error   when a tool call fails                     is the result instead of the error
//
// State changed through a hook's context lands in an event: the user's
// message for on_user_message, the answer (or a state-only event of the
// agent that would have answered) for before_run, the event itself for
// on_event, and, as for callbacks, the agent's, model call's or tool
// call's event for the others.
//
// on_event also sees the partial (streaming) events, marked partial, before
// they reach the caller: the text a partial carries is the caller's as
// soon as it is yielded, so a plugin that redacts or guards the stored
// answer must see its pieces too. A partial's replacement stays partial
// (it is not stored); returning ErrDropPartial for a partial drops it: no
// reader of the run sees it, and later hooks do not run on it. Only
// partials can be dropped: the complete event is the session's record
// and ErrDropPartial on it is an error like any other. State a hook
// changes while it sees a partial is stored with the next complete event.
// A runner whose plugins have no on_event hook spends nothing on partials.
//
// No other hook sees partial events. An error from on_user_message,
// before_run or on_event is delivered and the run goes on with the
// original message or event (a partial's too). A before_tool, after_tool
// or on_tool_error error is, as a tool callback's, the result the model
// reads.
//
// Imports: agent, tool, model and the generated messages. It must not
// import the runner, the LLM or workflow agents, model providers or gRPC
// (runner/deps_test.go checks).
package plugin

import (
	"context"
	"errors"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
)

// Plugin is a named set of hooks. Names are unique within a runner.
type Plugin interface {
	Name() string
}

// UserMessageHook sees the user's message before it is stored.
type UserMessageHook interface {
	OnUserMessage(ctx agent.InvocationContext, msg *agentrunnerv1.Content) (*agentrunnerv1.Content, error)
}

// BeforeRunHook runs once the user's message is stored, before the first
// agent. Content it returns is stored as the answer of the agent that
// would have run, and the run ends.
type BeforeRunHook interface {
	BeforeRun(ctx agent.InvocationContext) (*agentrunnerv1.Content, error)
}

// AfterRunHook runs when the run ends, whether it succeeded, was cut short
// by before_run or failed; err is the run's terminal error (nil when it
// ended normally). State it changes is not stored: the run is over.
type AfterRunHook interface {
	AfterRun(ctx agent.InvocationContext, err error)
}

// EventHook sees each event the agents yield: a complete one before it is
// stored, a partial one (ev.Partial set) before it is streamed. An event it
// returns is stored (if complete) and streamed in its place; returning
// ErrDropPartial for a partial event drops it. The hook owns ev while it
// runs; the event it returns becomes the runner's.
type EventHook interface {
	OnEvent(ctx agent.InvocationContext, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error)
}

// CompleteEventHook is an EventHook that never looks at partial events
// (it returns nil for them): the manager calls it for complete events
// only, so that the chunks of a streamed answer, the hot path of
// streaming, cost it nothing. The logging plugin, on in every served app,
// is one: it counts what a run stores.
type CompleteEventHook interface {
	EventHook
	// CompleteEventsOnly marks the hook; it is never called.
	CompleteEventsOnly()
}

// ErrDropPartial, returned by an on_event hook for a partial event, drops
// that event: the run's readers never see it. Like fs.SkipDir it is a
// signal, not a failure; for a complete event it is an error like any
// other (delivered in-band, and the event is stored as it was).
var ErrDropPartial = errors.New("drop partial event")

// BeforeAgentHook runs before every agent, before its before-agent
// callbacks.
type BeforeAgentHook interface {
	BeforeAgent(ctx agent.CallbackContext) (*agentrunnerv1.Content, error)
}

// AfterAgentHook runs after every agent, before its after-agent callbacks.
type AfterAgentHook interface {
	AfterAgent(ctx agent.CallbackContext) (*agentrunnerv1.Content, error)
}

// BeforeModelHook runs before every model call of an LLM agent. The
// request is the hook's to change; its contents are a copy of the session.
type BeforeModelHook interface {
	BeforeModel(ctx agent.CallbackContext, req *model.Request) (*model.Response, error)
}

// RequestObserver marks a BeforeModelHook that only reads the request
// (tracing, metrics, logging): it must not change it. Before a model call
// the LLM agent copies the request's contents, the session's whole
// history, only for hooks that may change them; an observer sees the
// agent's own.
type RequestObserver interface {
	ObservesRequestsOnly()
}

// AfterModelHook runs after every complete model response.
type AfterModelHook interface {
	AfterModel(ctx agent.CallbackContext, resp *model.Response) (*model.Response, error)
}

// ModelErrorHook runs when a model call fails.
type ModelErrorHook interface {
	OnModelError(ctx agent.CallbackContext, req *model.Request, err error) (*model.Response, error)
}

// BeforeToolHook runs before every tool call; args may be changed.
type BeforeToolHook interface {
	BeforeTool(ctx tool.Context, t tool.Tool, args map[string]any) (map[string]any, error)
}

// AfterToolHook runs after every tool call that returned a result.
type AfterToolHook interface {
	AfterTool(ctx tool.Context, t tool.Tool, args, result map[string]any) (map[string]any, error)
}

// ToolErrorHook runs when a tool call fails (an error or a panic).
type ToolErrorHook interface {
	OnToolError(ctx tool.Context, t tool.Tool, args map[string]any, err error) (map[string]any, error)
}

// Closer is implemented by plugins that hold resources (exporters,
// connections); the runner closes them when it closes, within its close
// timeout.
type Closer interface {
	Close(ctx context.Context) error
}
