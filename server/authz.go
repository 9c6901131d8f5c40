package server

import (
	"context"

	"github.com/agentrunner/agentrunner/server/internal/front"
	"google.golang.org/grpc"
)

// The interceptors that authenticate and authorize every call with the
// front desk's rules (Desk.Admit, Desk.Scope): authorization comes
// before the handler, and a request that did not decode (requestCodec)
// is refused after the caller is known and before its contents are read
// for scope, so that a caller that may not call learns nothing of it.

func authUnary(d *front.Desk) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if d.Auth() == nil {
			return handler(ctx, req)
		}
		ctx, err := d.Admit(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		if err := scope(ctx, d, info.FullMethod, req); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

func authStream(d *front.Desk) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if d.Auth() == nil {
			return handler(srv, ss)
		}
		ctx, err := d.Admit(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		return handler(srv, &scopedStream{ServerStream: ss, ctx: ctx, d: d, method: info.FullMethod})
	}
}

// scope is Desk.Scope of a request that decoded.
func scope(ctx context.Context, d *front.Desk, method string, req any) error {
	if err := decodeError(req); err != nil {
		return err
	}
	return d.Scope(ctx, method, req)
}

// scopedStream carries the principal and checks each request it receives
// against the method's scope.
type scopedStream struct {
	grpc.ServerStream
	ctx    context.Context
	d      *front.Desk
	method string
}

func (s *scopedStream) Context() context.Context { return s.ctx }

func (s *scopedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return scope(s.ctx, s.d, s.method, m)
}
