// Package remotea2a is the remote A2A agent: an agent of the tree that
// another team serves over A2A (Agent2Agent), called as a client through
// the official SDK (github.com/a2aproject/a2a-go/v2).
//
// On each turn the agent sends the remote agent one A2A message: the user
// events since its own last event, as they are, and what other agents said
// meanwhile, as text marked "For context:" (adk-go's RemoteA2AAgent does
// the same). The message goes in the A2A context of the agent's previous
// turns in the session, so the remote agent keeps its own history. What
// comes back streams as this agent's events: text as partial events when
// the run streams (STREAMING_MODE_SSE), then one complete event.
//
// Every complete event the agent yields carries, in custom_metadata under
// MetadataKey, the remote ids: {"context_id": ..., "task_id": ...,
// "task_state": ...}. That is how a later turn, a resumed run or a run
// attached from another replica finds the remote context and task again:
// the session is the only state, nothing is kept in memory.
//
// A remote task that asks for input (TASK_STATE_INPUT_REQUIRED) makes the
// run wait as a client-executed tool does. When it waits on tool calls of
// its own (data parts marked adk_type function_call, adk-go's shape), the
// agent's event holds those calls, their ids in long_running_tool_ids;
// their function_responses go back in the same remote task as data parts
// marked function_response, as adk-go's remoteagent sends them. When it
// asks in words, the agent calls the reserved function InputRequiredName,
// with the remote agent's question as {"message": ..., "task_id": ...};
// the answer goes in the same task: {"text": "..."} as a text part, any
// other object as a data part.
//
// The remote's own tool traffic (function calls and responses it shows as
// it works) becomes events of the agent of their own, never text of its
// answer; a call left without a response is closed when the turn ends,
// so that the run does not wait on it.
//
// A message's id is derived from the newest event it carries
// (messageID): a turn a crash cut and a resume runs again sends the same
// message with the same id, which a deduplicating remote can recognize.
//
// A remote agent that fails, rejects the task, cannot be reached, ends its
// stream before the task ends, or takes longer than the timeout yields one
// in-band error (the runner's *agent.AgentError), and the run goes on as
// it does after a failing model. A task left running on our side's
// failure or cancellation is cancelled remotely, best effort.
//
// Transports: only the SDK's JSON-RPC and HTTP+JSON (REST) clients, which
// are plain net/http; the SDK's gRPC transport lives in a2agrpc, which
// this package does not import, so runner/ stays free of gRPC (.ci/run's
// deps step checks it transitively).
//
// Imports: agent, the generated messages and the a2a-go client. It must
// not import the runner, the other agent packages, tool, model, plugin,
// apps, server, cmd or gRPC (runner/deps_test.go checks).
package remotea2a
