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
// # Concurrency
//
// A Runner allows one run per session at a time; a second concurrent Run on
// the same session fails up front with ErrRunInProgress. Runs on different
// sessions proceed in parallel. Parallel agents run their children in
// goroutines, but every event still reaches the Runner through one iterator,
// so events are persisted in a single order.
package runner
