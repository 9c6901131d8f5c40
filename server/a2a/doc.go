// Package a2a serves every app of the server as an Agent2Agent (A2A)
// agent, with the protocol's official Go SDK (github.com/a2aproject/a2a-go/v2):
// Handler is an a2asrv.RequestHandler, which cmd/agentrunner registers as
// lf.a2a.v1.A2AService on the same grpc.Server as the agentrunner services
// (so the same interceptors answer it: logging, recovery, auth, limits,
// telemetry), and whose JSON-RPC and REST bindings and agent cards HTTP
// serves on the HTTP listener under /a2a/{app}/ (server/web mounts it).
//
// The model maps almost one to one: a context is a session (created when
// new, owned by the caller's user), a task is a run, input-required is a
// run waiting on calls, cancel is CancelRun, subscribe is AttachRun, get
// is GetRun, list is ListRuns. docs/a2a.md has the whole table.
//
// It sits beside package server on the front desk (server/internal/front,
// through the small interface desk): the same run checks, limits, run-id
// authorization and error-to-status map as the gRPC services, and never
// the runner's machinery directly. It imports neither server nor its
// parent, and must not be imported by server or runner.
package a2a
