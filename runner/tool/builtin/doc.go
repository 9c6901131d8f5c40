// Package builtin holds the built-in tools: exit_loop, load_artifacts,
// load_memory, preload_memory and transfer_to_agent (which LLM agents add by themselves when they have
// somewhere to transfer to).
//
// Imports: tool, agent, memory, model and the generated messages. It must not
// import the runner, the LLM or workflow agents, plugin, model providers
// or gRPC (runner/deps_test.go checks).
package builtin
