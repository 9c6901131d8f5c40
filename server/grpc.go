package server

import (
	"context"
	"net"
	"net/http"

	"github.com/agentrunner/agentrunner/server/internal/front"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

// GRPCServer is a grpc.Server carrying the agentrunner services, health and
// reflection.
type GRPCServer struct {
	grpc   *grpc.Server
	health *health.Server
	srv    *Server
}

// NewGRPCServer returns a gRPC server with s's services registered, the
// standard health service reporting SERVING for each of them and for the
// server as a whole (""), and reflection on, so grpcurl works without proto
// files. Messages are limited to the configured size in both directions;
// panics in handlers become Internal; every call is logged with its method,
// code and duration. With Config.Auth, every call but health checks is
// authenticated and authorized (front.MethodAccess). extra options are appended:
// TLS credentials (grpc.Creds), telemetry, test options.
func NewGRPCServer(s *Server, extra ...grpc.ServerOption) *GRPCServer {
	vc := front.NewValueChecker()
	log := s.desk.Logger()
	opts := append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.desk.MaxRequestBytes()),
		grpc.MaxSendMsgSize(s.desk.MaxMessageBytes()),
		// Stop and GracefulStop then return only once every handler has
		// returned, which is what makes closing the store afterwards safe.
		grpc.WaitForHandlers(true),
		// Requests that do not decode are InvalidArgument, not Internal
		// (see requestCodec).
		grpc.ForceServerCodecV2(newRequestCodec()),
		// Authorization comes before decoding: a caller that may not
		// call learns nothing, not even that its request was malformed.
		grpc.ChainUnaryInterceptor(unaryLogging(log), unaryRecovery(log), authUnary(s.desk), decodeUnary(vc)),
		grpc.ChainStreamInterceptor(streamLogging(log), streamRecovery(log), authStream(s.desk), decodeStream(vc)),
	}, extra...)
	gs := grpc.NewServer(opts...)
	s.Register(gs)

	hs := health.NewServer() // "" starts SERVING
	for _, name := range ServiceNames() {
		hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	return &GRPCServer{grpc: gs, health: hs, srv: s}
}

// GRPC returns the grpc.Server itself, for server/web, which serves the
// same services, with the same interceptors, over HTTP (Connect,
// gRPC-Web and gRPC through net/http). Serve stays the way to serve gRPC
// on a listener: grpc-go's own transport is faster than its ServeHTTP.
func (g *GRPCServer) GRPC() *grpc.Server { return g.grpc }

// AuthenticateHTTP is what server/web asks of a request for an RPC before
// it reads the body (web.Config.Authenticate): an error when the method
// needs credentials and the request carries none that name a principal.
// It is nil when the server has no authentication.
func (g *GRPCServer) AuthenticateHTTP() func(*http.Request) error {
	if g.srv.desk.Auth() == nil {
		return nil
	}
	return g.srv.desk.AuthenticateRPC
}

// MaxRequestBytes is the largest request message the server takes
// (--max-request-bytes): the HTTP listener bounds every binding's bodies
// by it.
func (g *GRPCServer) MaxRequestBytes() int { return g.srv.desk.MaxRequestBytes() }

// MaxMessageBytes is the largest message the server sends or receives:
// server/web bounds what it buffers to transcode a message by it.
func (g *GRPCServer) MaxMessageBytes() int { return g.srv.desk.MaxMessageBytes() }

// Serve accepts connections on lis until Shutdown. It returns nil after a
// shutdown and the listener's error otherwise.
func (g *GRPCServer) Serve(lis net.Listener) error {
	return g.grpc.Serve(lis)
}

// NotServing turns health NOT_SERVING, so that load balancers stop
// sending new calls, while the server goes on serving those that come
// (the start of a drain).
func (g *GRPCServer) NotServing() { g.health.Shutdown() }

// Shutdown stops the server. Health turns NOT_SERVING first, so load
// balancers stop sending calls; then in-flight calls and streams get until
// ctx is done to finish, after which the rest are cancelled. It returns
// ctx's error when calls had to be cancelled. When Shutdown returns, no
// handler is running, so the store can be closed.
func (g *GRPCServer) Shutdown(ctx context.Context) error {
	g.health.Shutdown()
	done := make(chan struct{})
	go func() {
		g.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		g.grpc.Stop()
		<-done
		return ctx.Err()
	}
}
