// Command example is agentrunner from Go: create a session, run two
// messages, list artifacts.
//
//	go run ./examples/go [-addr 127.0.0.1:50051] [-app demo] [-user U] [MESSAGE ...]
//
// Against a server with authentication (docs/security.md):
// -token-file FILE (or env AGENTRUNNER_TOKEN) sends a bearer token,
// -ca-file CA.pem turns TLS on, -cert-file/-key-file add a client
// certificate (mTLS).
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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

func main() {
	addr := flag.String("addr", envOr("AGENTRUNNER_ADDR", "127.0.0.1:50051"), "server address")
	app := flag.String("app", "demo", "app to run")
	user := flag.String("user", "go-example", "user id")
	var sec security
	flag.StringVar(&sec.tokenFile, "token-file", "", "file holding the bearer token (env AGENTRUNNER_TOKEN holds the token itself)")
	flag.StringVar(&sec.caFile, "ca-file", "", "PEM CA of the server's certificate; turns TLS on")
	flag.StringVar(&sec.certFile, "cert-file", "", "PEM client certificate (mTLS), with -key-file")
	flag.StringVar(&sec.keyFile, "key-file", "", "PEM key of -cert-file")
	flag.Parse()
	messages := flag.Args()
	if len(messages) == 0 {
		messages = []string{"Hello! What can you do?", "Tell me more."}
	}
	if err := run(*addr, *app, *user, sec, messages); err != nil {
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

func run(addr, app, user string, sec security, messages []string) error {
	opts, err := sec.dialOptions()
	if err != nil {
		return err
	}
	// The server sends responses of up to 32 MiB (a page of a large
	// session); gRPC's default would refuse anything above 4 MiB.
	opts = append(opts, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(32<<20)))
	conn, err := grpc.NewClient(addr, opts...)
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
	// The first author of each run is the agent the runner chose to answer.
	var answered []string
	for _, msg := range messages {
		authors, err := send(ctx, runner, app, user, id, msg)
		if err != nil {
			return err
		}
		if len(authors) == 0 {
			authors = []string{"-"}
		}
		answered = append(answered, authors[0])
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
	fmt.Printf("stored events: %d; answered by: %s\n", len(got.GetEvents()), strings.Join(answered, ", "))
	return nil
}

// send runs one message, prints the stream and returns the authors of the
// complete events.
func send(ctx context.Context, runner servicev1.RunnerServiceClient, app, user, session, text string) ([]string, error) {
	stream, err := runner.Run(ctx, &servicev1.RunRequest{
		AppName: app, UserId: user, SessionId: session,
		NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}},
		RunConfig:  &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE},
	})
	if err != nil {
		return nil, err
	}
	var authors []string
	streaming := false
	for {
		resp, err := stream.Recv()
		if streaming && !resp.GetEvent().GetPartial() {
			fmt.Println()
			streaming = false
		}
		if errors.Is(err, io.EOF) {
			return authors, nil
		}
		if err != nil {
			return nil, err
		}
		if resp.GetRun() != nil { // the run record, first and last; see GetRun
			continue
		}
		if e := resp.GetError(); e != nil { // an agent failed; the run goes on
			fmt.Printf("[agent error %s] %s\n", codes.Code(e.GetCode()), e.GetMessage())
			continue
		}
		ev := resp.GetEvent()
		if ev.GetPartial() { // streamed text; the complete event follows
			if !streaming {
				fmt.Printf("%s (streaming): ", ev.GetAuthor())
			}
			fmt.Print(textOf(ev))
			streaming = true
			continue
		}
		authors = append(authors, ev.GetAuthor())
		var shown []string
		if t := textOf(ev); t != "" {
			shown = append(shown, t)
		}
		for _, p := range ev.GetContent().GetParts() {
			if fc := p.GetFunctionCall(); fc != nil {
				shown = append(shown, "calls "+fc.GetName())
			}
			if fr := p.GetFunctionResponse(); fr != nil {
				shown = append(shown, fr.GetName()+" returned")
			}
		}
		if t := ev.GetActions().GetTransferToAgent(); t != "" {
			shown = append(shown, "-> transfer to "+t)
		}
		if c := ev.GetErrorCode(); c != "" { // the model or a tool failed; the event says how
			shown = append(shown, "["+c+"] "+ev.GetErrorMessage())
		}
		fmt.Printf("#%d %s: %s\n", ev.GetSequence(), ev.GetAuthor(), strings.Join(shown, " "))
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
