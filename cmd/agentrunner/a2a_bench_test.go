package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// benchServer serves the default apps with the HTTP listener, for a
// benchmark, and returns the gRPC address and the console URL. Extra args
// come last, so they override the defaults (a --data of seeded store).
func benchServer(b *testing.B, args ...string) (addr, console string) {
	b.Helper()
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE", envConfig, envAuthFile, envHTTPPrefix} {
		b.Setenv(k, "")
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	logs := watchLogs(pr)
	exited := make(chan error, 1)
	go func() {
		all := append([]string{"serve", "--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
			"--data", filepath.Join(b.TempDir(), "a.db")}, args...)
		err := run(ctx, all, strings.NewReader(""), io.Discard, pw)
		pw.Close()
		exited <- err
	}()
	b.Cleanup(func() { cancel(); <-exited })
	select {
	case addr = <-logs.addr:
	case err := <-exited:
		b.Fatalf("serve: %v\n%s", err, logs)
	case <-time.After(60 * time.Second):
		b.Fatalf("no address logged:\n%s", logs)
	}
	m := consoleLine.FindStringSubmatch(logs.String())
	if m == nil {
		b.Fatalf("no console URL:\n%s", logs)
	}
	return addr, m[1]
}

// BenchmarkA2AStream compares one streamed answer of the support app
// (offline model, streaming mode SSE) as an A2A task over the A2A gRPC
// binding with the same run over RunnerService.Run, both on loopback
// against the same server: what A2A costs on top of a run.
func BenchmarkA2AStream(b *testing.B) {
	addr, console := benchServer(b)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	b.Run("a2a-grpc", func(b *testing.B) {
		card, err := agentcard.DefaultResolver.Resolve(b.Context(), console+"a2a/support")
		if err != nil {
			b.Fatal(err)
		}
		c, err := a2aclient.NewFromCard(b.Context(), card, a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())),
			a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{a2a.TransportProtocolGRPC}}))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Destroy()
		for b.Loop() {
			var final a2a.TaskState
			for ev, err := range c.SendStreamingMessage(b.Context(), textMessage("", "hello bench")) {
				if err != nil {
					b.Fatal(err)
				}
				if v, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
					final = v.Status.State
				}
			}
			if final != a2a.TaskStateCompleted {
				b.Fatalf("task ended %s", final)
			}
		}
	})
	b.Run("run-rpc", func(b *testing.B) {
		rc, sc := servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn)
		for b.Loop() {
			s, err := sc.CreateSession(b.Context(), &servicev1.CreateSessionRequest{AppName: "support", UserId: "a2a"})
			if err != nil {
				b.Fatal(err)
			}
			stream, err := rc.Run(b.Context(), &servicev1.RunRequest{AppName: "support", UserId: "a2a", SessionId: s.GetSession().GetSessionId(),
				NewMessage: userText("hello bench"), RunConfig: &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}})
			if err != nil {
				b.Fatal(err)
			}
			var last *agentrunnerv1.Run
			for {
				resp, err := stream.Recv()
				if err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
				if r := resp.GetRun(); r != nil {
					last = r
				}
			}
			if last.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
				b.Fatalf("run ended %v", last.GetStatus())
			}
		}
	})
}
