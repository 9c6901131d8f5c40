// Package runner runs agent trees inside persistent sessions, and serves
// their runs as resources: it admits runs (one per session at a time; the
// others refused, queued or interrupting, as each asks), executes them,
// lets any number of readers follow them, cancels, resumes and recovers
// them. Its public API is Runner (New, Stream, Run, Start, Attach, GetRun,
// ListRuns, Cancel, Resume, Recover, Shutdown), with the words it
// speaks (Config, Request, Update, Budgets, Compaction, ClaimGate, the
// errors) all defined here.
//
// For each user message a Runner loads the session (its recent history,
// kept in memory between runs), selects the agent that should
// answer (agent.Tree.SelectAgent), appends the user message, runs the
// agent, and streams the events it produces. Complete events are persisted
// before they are yielded and before the agent continues; partial
// (streaming) events are yielded and never stored. A run's final record is
// on disk before any reader hears of it.
//
// The agents and their parts live in packages of their own:
//
//	runner/agent            Agent, contexts, callbacks, the tree
//	runner/agent/llmagent   the agent a model drives
//	runner/agent/workflow   sequential, parallel and loop agents
//	runner/tool             Tool, function tools, schemas
//	runner/tool/builtin     exit_loop, load_artifacts, transfer_to_agent
//	runner/model            the Model interface (+ gemini, openai, anthropic, offline)
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

// The machinery behind the Runner lives in rooms of its own, which no
// embedder needs to read: runner/internal/runrec (the run record's
// rules), live (a live run's log and readers), turn (one execution:
// plan it, run the agents through the run's journal, end it), replica
// (sharing the store with other replicas, or not) and history (the
// recent history kept between runs). This package keeps admission and
// the registry of live runs (admission.go), the entry points that stream
// a run (stream.go) and treat runs as resources (runs.go), the glue of an
// execution (execute.go), resuming (resume.go), recovery and shutdown
// (recover.go), what the replicas may ask of it (host.go), and its
// public words (update.go, budgets.go, compaction.go, claims.go,
// errors.go), which it converts at the rooms' doors.
