// Package server serves agentrunner over gRPC: SessionService,
// ArtifactService and RunnerService, plus the standard health and reflection
// services.
//
// Handlers are thin. Each one validates the request (InvalidArgument naming
// the offending field), calls the store or the app's runner, converts the
// result, and maps errors to status codes in one place, toStatus in
// errors.go. The storage and the apps are narrow interfaces declared here, so
// the package depends on what it calls rather than on implementations.
//
// NewGRPCServer builds the grpc.Server every binary uses: explicit message
// size limits, recovery and logging interceptors, health and reflection.
package server
