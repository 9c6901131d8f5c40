package web

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/server/console"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// benchListener serves health and g over the HTTP listener on loopback.
func benchListener(b *testing.B, g gate) string {
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	servicev1.RegisterRunnerServiceServer(gs, g)
	s, err := New(Config{GRPC: gs, Console: console.FS(), MaxMessageBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = s.Serve(lis) }()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		gs.Stop()
	})
	return URL(lis.Addr(), false, "")
}

// BenchmarkHTTPListener times one call over the HTTP listener, per
// protocol, end to end on loopback: health's Check as a unary call
// (Connect JSON, Connect proto, gRPC-Web) and a two-message Run stream
// (Connect streaming), which is what the gate reads and checks before
// vanguard transcodes it.
func BenchmarkHTTPListener(b *testing.B) {
	release := make(chan struct{})
	close(release)
	base := benchListener(b, gate{release: release})
	const check = "grpc.health.v1.Health/Check"
	cases := []struct {
		name, path, ct string
		body           []byte
	}{
		{"connect_json_unary", check, "application/json", []byte(`{}`)},
		{"connect_proto_unary", check, "application/proto", nil},
		{"grpc_web_unary", check, "application/grpc-web+proto", []byte{0, 0, 0, 0, 0}},
		{"connect_json_stream", "agentrunner.service.v1.RunnerService/Run", "application/connect+json", append([]byte{0, 0, 0, 0, 2}, "{}"...)},
	}
	client := &http.Client{}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				req, err := http.NewRequest(http.MethodPost, base+c.path, bytes.NewReader(c.body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", c.ct)
				req.Header.Set("Connect-Protocol-Version", "1")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || resp.Header.Get("Grpc-Status") != "" && resp.Header.Get("Grpc-Status") != "0" {
					b.Fatalf("%s: %d %v", c.name, resp.StatusCode, resp.Header)
				}
			}
		})
	}
}
