// Package tool owns what a tool is: the Tool interface an LLM agent's
// model calls, the Context a tool runs with, request processors, and
// function tools, whose JSON schema is derived from a Go argument type.
// The built-in tools are in package builtin.
//
// Imports: agent (for the contexts), model (for declarations) and the
// generated messages. It must not import the runner, the LLM or workflow
// agents, plugin, model providers or gRPC (runner/deps_test.go checks).
package tool
