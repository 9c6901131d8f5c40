package server

import (
	"context"
	"iter"
	"log/slog"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// TestNextRunWaitsForACancelledOne: a chat user stops an answer and sends
// the next message at once. The first run's caller is gone and its agent
// is still unwinding when the next Run arrives: that Run waits for the
// session instead of being refused with Aborted, and answers.
func TestNextRunWaitsForACancelledOne(t *testing.T) {
	entered, unwinding, unwind := make(chan string, 4), make(chan struct{}), make(chan struct{})
	slow := customApp("slow", func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			msg := ctx.UserContent().GetParts()[0].GetText()
			entered <- msg
			if msg != "first" {
				yield(say("answer to "+msg), nil)
				return
			}
			<-ctx.Done()
			close(unwinding)
			<-unwind // cleaning up takes a moment
			yield(nil, ctx.Err())
		}
	})
	// The server signals when a Run reaches it, so that the test lets
	// the first run finish unwinding only once the next one is there.
	arrived := make(chan struct{}, 4)
	signal := grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		arrived <- struct{}{}
		return h(srv, ss)
	})
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Store: st, Logger: slog.New(slog.DiscardHandler)}
	withRunnerApps(t, slow)(&cfg)
	g := NewGRPCServer(New(cfg), signal)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(func() { _ = g.Shutdown(context.Background()); _ = st.Close() })
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sc, rc := servicev1.NewSessionServiceClient(conn), servicev1.NewRunnerServiceClient(conn)
	if _, err := sc.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "slow", UserId: "u1", SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	first, err := rc.Run(ctx, runReq("slow", "s", "first"))
	if err != nil {
		t.Fatal(err)
	}
	<-arrived
	if got := <-entered; got != "first" {
		t.Fatalf("entered %q", got)
	}
	stop() // the user stops the answer
	_, _ = first.Recv()
	<-unwinding

	next, err := rc.Run(t.Context(), runReq("slow", "s", "second"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan runResult, 1)
	go func() {
		resps, err := collectRun(t, next)
		res := runResult{status: err}
		for _, r := range resps {
			if ev := r.GetEvent(); ev != nil && !ev.GetPartial() {
				res.events = append(res.events, ev)
			}
		}
		done <- res
	}()
	<-arrived // the next Run is at the server while the first still unwinds
	close(unwind)
	res := <-done
	if res.status != nil {
		t.Fatalf("the next message after a stopped answer: %v; want it to wait for the session and answer", res.status)
	}
	if len(res.events) == 0 || res.events[len(res.events)-1].GetContent().GetParts()[0].GetText() != "answer to second" {
		t.Fatalf("the next run's events: %v", res.events)
	}
}
