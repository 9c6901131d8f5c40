// Command example is agentrunner from Go: create a session, run two
// messages, list artifacts.
//
//	go run ./examples/go [-addr 127.0.0.1:50051] [-app demo]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

func main() {
	addr := flag.String("addr", envOr("AGENTRUNNER_ADDR", "127.0.0.1:50051"), "server address")
	app := flag.String("app", "demo", "app to run")
	user := flag.String("user", "go-example", "user id")
	flag.Parse()
	if err := run(*addr, *app, *user); err != nil {
		if st, ok := status.FromError(err); ok {
			fmt.Fprintf(os.Stderr, "RPC failed: %s: %s\n", st.Code(), st.Message())
		} else {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func run(addr, app, user string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sessions := servicev1.NewSessionServiceClient(conn)
	runner := servicev1.NewRunnerServiceClient(conn)
	artifacts := servicev1.NewArtifactServiceClient(conn)

	created, err := sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: app, UserId: user})
	if err != nil {
		return err
	}
	id := created.GetSession().GetSessionId()
	fmt.Println("session", id)
	var authors []string
	for _, msg := range []string{"Hello! What can you do?", "Tell me more."} {
		last, err := send(ctx, runner, app, user, id, msg)
		if err != nil {
			return err
		}
		authors = append(authors, last)
	}
	arts, err := artifacts.ListArtifacts(ctx, &servicev1.ListArtifactsRequest{AppName: app, UserId: user, SessionId: id})
	if err != nil {
		return err
	}
	var names []string
	for _, a := range arts.GetArtifacts() {
		names = append(names, a.GetFilename())
	}
	fmt.Printf("artifacts: [%s]\n", strings.Join(names, ", "))
	got, err := sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: app, UserId: user, SessionId: id})
	if err != nil {
		return err
	}
	fmt.Printf("stored events: %d; answered by: %s\n", len(got.GetEvents()), strings.Join(authors, ", "))
	return nil
}

// send runs one message, prints the stream and returns the author of the
// last complete event.
func send(ctx context.Context, runner servicev1.RunnerServiceClient, app, user, session, text string) (string, error) {
	stream, err := runner.Run(ctx, &servicev1.RunRequest{
		AppName: app, UserId: user, SessionId: session,
		NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}},
		RunConfig:  &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE},
	})
	if err != nil {
		return "", err
	}
	last, streaming := "-", false
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return last, nil
		}
		if err != nil {
			return "", err
		}
		if e := resp.GetError(); e != nil {
			fmt.Printf("\n[agent error %d] %s\n", e.GetCode(), e.GetMessage())
			continue
		}
		ev := resp.GetEvent()
		if ev.GetPartial() {
			fmt.Print(textOf(ev))
			streaming = true
			continue
		}
		if streaming {
			fmt.Println()
			streaming = false
		}
		extra := ""
		for _, p := range ev.GetContent().GetParts() {
			if fc := p.GetFunctionCall(); fc != nil {
				extra += " calls " + fc.GetName()
			}
		}
		if t := ev.GetActions().GetTransferToAgent(); t != "" {
			extra += " -> transfer to " + t
		}
		fmt.Printf("#%d %s: %s%s\n", ev.GetSequence(), ev.GetAuthor(), textOf(ev), extra)
		last = ev.GetAuthor()
	}
}

func textOf(ev *agentrunnerv1.Event) string {
	var b strings.Builder
	for _, p := range ev.GetContent().GetParts() {
		if !p.GetThought() {
			b.WriteString(p.GetText())
		}
	}
	return b.String()
}
