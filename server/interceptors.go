package server

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The interceptors are chained logging first, recovery second, so that a
// recovered panic is logged with the Internal code the client receives.

func unaryLogging(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		logRPC(ctx, log, info.FullMethod, start, err)
		return resp, err
	}
}

func streamLogging(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, ss)
		logRPC(ss.Context(), log, info.FullMethod, start, err)
		return err
	}
}

// logRPC writes one line per call. Codes that mean the server failed are
// errors, the client's mistakes are info, and successful calls are debug:
// at the default level a busy server logs what needs a look, not every
// health check and append.
func logRPC(ctx context.Context, log *slog.Logger, method string, start time.Time, err error) {
	code := status.Code(err)
	level := slog.LevelInfo
	switch code {
	case codes.OK:
		level = slog.LevelDebug
	case codes.Unauthenticated, codes.PermissionDenied:
		// The authorizer has logged the denial with its reason, once.
		level = slog.LevelDebug
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unavailable:
		level = slog.LevelError
	}
	if !log.Enabled(ctx, level) {
		return
	}
	log.LogAttrs(ctx, level, "rpc",
		slog.String("method", method),
		slog.String("code", code.String()),
		slog.Duration("duration", time.Since(start)))
}

func unaryRecovery(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				resp, err = nil, recovered(ctx, log, info.FullMethod, r)
			}
		}()
		return handler(ctx, req)
	}
}

func streamRecovery(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = recovered(ss.Context(), log, info.FullMethod, r)
			}
		}()
		return handler(srv, ss)
	}
}

// recovered logs a handler panic with its stack and returns what the client
// sees: Internal, without the panic value, which may hold anything.
func recovered(ctx context.Context, log *slog.Logger, method string, r any) error {
	log.ErrorContext(ctx, "panic in handler",
		"method", method, "panic", r, "stack", string(debug.Stack()))
	return status.Error(codes.Internal, "internal error")
}
