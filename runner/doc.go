// Package runner runs agent trees inside persistent sessions.
//
// An app is a tree of agents: custom agents with a Go run function
// (NewAgent), LLM agents driven by a model.Model (NewLLMAgent), and workflow
// agents that orchestrate their children (NewSequential, NewParallel,
// NewLoop). A Runner serves one app: for each user message it loads the
// session, selects the agent that should answer, appends the user message,
// runs the agent, and streams the events it produces. Complete events are
// persisted before they are yielded and before the agent continues; partial
// (streaming) events are yielded and never stored.
//
// The package speaks the generated agentrunner.v1 messages and the store
// vocabulary; it never imports gRPC. The server maps its errors to status
// codes: an *AgentError is delivered in-band and the run goes on, every other
// error ends the run.
//
// # State
//
// Agents read state through InvocationContext.State and write it through
// deltas: State().Set records a change that lands in the state_delta of the
// next complete event the agent yields (or of a state-only event when the
// agent yields none), and callbacks' changes land in the event the callback
// produces. Keys prefixed "temp:" are visible to the rest of the invocation
// and never stored.
//
// # LLM agents, tools and transfers
//
// An LLM agent builds each model request from the session: its own and the
// user's turns as they are, other agents' turns as context ("For context:
// [name] said: ..."), each function call followed by its responses. When
// the model calls functions, the agent runs the Tools (NewFunctionTool
// derives a tool's JSON schema from a Go argument type), concurrently when
// there are several, yields their responses in one event, and calls the
// model again. A tool's error or panic is returned to the model as
// {"error": "..."}. A long-running tool's call ends the run; the client
// answers it with a function response in a later Run, which the runner
// routes back to the agent that made the call.
//
// An agent with somewhere to go gets the transfer_to_agent tool: its
// sub-agents, and its parent and peers when its parent is an LLM agent and
// DisallowTransferToParent and DisallowTransferToPeers allow. A transfer
// ends the agent's turn and the target runs at once, in the same run (a
// sequence the agent is in goes on after it). A custom agent transfers by
// yielding an event with actions.transfer_to_agent; the runner then runs
// the target once the agent ends.
// The built-in exit_loop tool (ExitLoopTool) stops an enclosing loop agent,
// and load_artifacts (LoadArtifactsTool) loads session artifacts into the
// conversation.
//
// # Concurrency
//
// A Runner allows one run per session at a time; a second concurrent Run on
// the same session fails up front with ErrRunInProgress. Runs on different
// sessions proceed in parallel. Parallel agents run their children in
// goroutines, but every event still reaches the Runner through one iterator,
// so events are persisted in a single order.
package runner
