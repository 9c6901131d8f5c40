// Package server serves agentrunner over gRPC: SessionService,
// ArtifactService, RunnerService, MemoryService, UsageService and
// EvalService, plus the standard health and reflection services.
//
// The services are thin: each embeds the front desk (package
// server/internal/front), which validates every request (InvalidArgument
// naming the offending field), applies the limits and the auth file's
// grants, admits runs, calls the store or the app's runner, and maps
// errors to status codes in one place. This package adds what is gRPC's:
// NewGRPCServer builds the grpc.Server every binary uses, with explicit
// message size limits, the codec that refuses undecodable requests as
// InvalidArgument, recovery, logging and auth interceptors, health and
// reflection. Package server/a2a serves the same desk over A2A, and
// server/web serves this gRPC server over HTTP.
package server
