// Package agent owns what every agent is: the Agent interface and the one
// implementation all kinds share (custom agents are built here, LLM and
// workflow agents by their packages on top of New), the before- and
// after-agent callbacks, the invocation and callback contexts agents run
// with, the session, state, artifact and memory views those contexts give,
// and the agent tree (validation, lookup, transfer targets, selection of
// the agent that answers a message).
//
// The runner drives an invocation through Invocation, the runner's side of
// the contexts. Agents see only copies of the session's stored events: the
// instances the runner keeps (its history cache) are reachable only through
// the sealed accessors, which code outside runner/ cannot call.
//
// Every agent runs through Agent.Run of this package, which fills in what
// events leave out (author, branch, invocation id), runs the runner-wide
// plugin hooks and then the agent's own callbacks, and recovers a panic of
// the agent's body or of a callback into an in-band *AgentError.
//
// Imports: the generated messages, store's vocabulary and memory. It must
// not import the runner, the other agent packages, tool, plugin, model
// providers or gRPC (runner/deps_test.go checks).
package agent
