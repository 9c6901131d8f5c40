// Package runner runs agent trees inside persistent sessions: the run loop
// and admission, and nothing else.
//
// For each user message a Runner loads the session (its recent history,
// kept between runs by an internal cache), selects the agent that should
// answer (agent.Tree.SelectAgent), appends the user message, runs the
// agent, and streams the events it produces. Complete events are persisted
// before they are yielded and before the agent continues; partial
// (streaming) events are yielded and never stored. One run per session at
// a time: a second concurrent Run fails up front with ErrRunInProgress.
//
// The pieces live in packages of their own:
//
//	runner/agent            Agent, contexts, callbacks, the tree
//	runner/agent/llmagent   the agent a model drives
//	runner/agent/workflow   sequential, parallel and loop agents
//	runner/tool             Tool, function tools, schemas
//	runner/tool/builtin     exit_loop, load_artifacts, transfer_to_agent
//	runner/model            the Model interface (+ gemini, offline)
//	runner/memory           long-term memory search
//	runner/plugin           the runner-wide plugin seam (+ logging)
//	runner/apps             the app registry and the apps file
//
// Plugins (Config.Plugins) see every run, agent, model and tool step, as
// package plugin describes; they run before the agents' own callbacks.
//
// Events handed out are copies: the caller owns every event Run yields,
// and agents see copies of the session's stored events, so nothing either
// does to an event can change the session or the history cache. A panic in
// an agent, a callback, a plugin hook, a tool, a model stream or a parallel
// branch becomes an in-band *agent.AgentError; the run goes on or ends
// cleanly, and the process is never at risk.
//
// The package speaks the generated agentrunner.v1 messages and the store
// vocabulary. It must not import gRPC, the apps registry, concrete agent
// kinds or model providers (runner/deps_test.go checks): the server maps
// its errors to status codes, an *agent.AgentError is delivered in-band and
// the run goes on, every other error ends the run.
package runner
