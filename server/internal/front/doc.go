// Package front is the server's front desk: what every protocol checks
// before a call reaches the store or a runner, and the calls themselves.
//
// A Desk answers every agentrunner RPC in-process, with the API's own
// request and response messages (the run RPCs with a sequence of the
// runner's updates), the way containerd's local services do: package
// server serves it over gRPC (and, through server/web, over Connect and
// gRPC-Web), and package server/a2a over the Agent2Agent protocol, each a
// thin adapter that adds nothing but its protocol.
//
// The rooms, from the ground up: validate.go (every field of every
// request), auth.go (who a caller is and what each method asks of it:
// MethodAccess), limits.go (what one call, one principal and the server
// may take, and the runs in progress), desk.go (the Desk and what it
// serves from: Store, Apps), guards.go (the desk applying auth and
// limits to a call), status.go (the one mapping of errors to gRPC
// statuses), and the calls: sessions.go, artifacts.go, memory.go,
// usage.go, runs.go and admission.go, where Run, StartRun and ResumeRun
// of every protocol are admitted.
//
// It imports neither package server nor anything above it: the import
// rules in runner/deps_test.go hold it to that.
package front
