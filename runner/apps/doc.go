// Package apps is where served apps come from and live: the registry of
// apps a server hosts (each served by its own runner over a shared store),
// and the apps file that `agentrunner serve --config` reads: YAML or JSON
// whose schema is the agentrunner.v1.AppsConfig proto message, built into
// agent trees of LLM and workflow agents. Every problem in a file is
// reported with the file, the line, the path of the offending value
// (apps[0].root_agent.sub_agents[1].llm.model) and what is wrong, so a bad
// deployment fails at start instead of at the first run.
//
// Imports: the runner and its agent, tool, plugin and memory packages, and
// model's interface. It must not import model providers (models come from a
// ModelFactory) or gRPC (runner/deps_test.go checks).
package apps
