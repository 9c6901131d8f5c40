// Command embed serves agentrunner from your own Go program, with your own
// agents, tools and plugins: a custom agent, a Go function tool and a
// plugin, over the same gRPC API, store and clients as `agentrunner serve`.
//
//	go run ./examples/embed [-addr 127.0.0.1:50052] [-data embed.db]
//
// Then, from another terminal, any client works, for example:
//
//	go run ./examples/go -addr 127.0.0.1:50052 -app shop "how many words is this" "hello"
//
// The app "shop" is a tree of two agents: a custom agent, "front", greets
// and hands every question over to "clerk", an LLM agent that may call
// the word_count tool. The model is a tiny rule-based one defined below
// (it calls word_count when the message asks for words), so the example
// runs offline; a real deployment passes a Gemini model instead. The
// "audit" plugin sees every run: it counts the tool calls of each user in
// "user:" state, and refuses, before any agent runs, messages that say
// "password".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/server"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50052", "address to serve gRPC on")
	data := flag.String("data", "embed.db", "bbolt data file")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *addr, *data); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

// serve wires the store, the registry with the plugins, the app and the
// gRPC server, and serves until ctx ends.
func serve(ctx context.Context, addr, data string) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	st, err := boltstore.Open(data, boltstore.Options{Logger: log})
	if err != nil {
		return err
	}
	defer st.Close()
	reg, err := apps.NewRegistry(apps.Config{
		Store:  st,
		Memory: memory.NewIndex(st),
		// Plugins run in this order, before the agents' own callbacks.
		Plugins: []plugin.Plugin{plugin.NewLogging(log), &audit{}},
		Logger:  log,
	})
	if err != nil {
		return err
	}
	app, err := shopApp()
	if err != nil {
		return err
	}
	if _, err := reg.Register(app); err != nil {
		return err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := server.NewGRPCServer(server.New(server.Config{Store: st, Apps: server.RunnerApps(reg), Logger: log}))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	log.Info("serving", "addr", lis.Addr().String(), "app", app.Name)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return errors.Join(<-served, reg.Close(sctx))
}

// shopApp builds the agent tree: front (custom) -> clerk (LLM, word_count).
func shopApp() (apps.App, error) {
	wordCount, err := tool.NewFunction("word_count", "Counts the words of a text.",
		func(ctx tool.Context, args struct {
			Text string `json:"text" description:"The text to count the words of."`
		}) (map[string]any, error) {
			return map[string]any{"words": len(strings.Fields(args.Text))}, nil
		})
	if err != nil {
		return apps.App{}, err
	}
	clerk, err := llmagent.New(llmagent.Config{
		Name:        "clerk",
		Description: "Answers questions, and counts words with a tool.",
		Model:       rulesModel{},
		Instruction: "You are a helpful clerk.",
		Tools:       []tool.Tool{wordCount},
	})
	if err != nil {
		return apps.App{}, err
	}
	front, err := agent.New(agent.Config{
		Name:        "front",
		Description: "Greets and hands over to the clerk.",
		SubAgents:   []agent.Agent{clerk},
		Run:         frontDesk,
	})
	if err != nil {
		return apps.App{}, err
	}
	return apps.App{Name: "shop", Description: "An app defined in Go: custom agent, tool and plugin.", Root: front}, nil
}

// frontDesk is the custom agent's body: one event that greets and
// transfers to the clerk, which the runner then runs in the same run.
func frontDesk(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
	return func(yield func(*agentrunnerv1.Event, error) bool) {
		yield(&agentrunnerv1.Event{
			Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{
				Text: "Welcome! The clerk will help you."}}}},
			Actions: &agentrunnerv1.EventActions{TransferToAgent: "clerk"},
		}, nil)
	}
}

// rulesModel is a stand-in for a language model: it calls word_count on
// the user's message when the message says "words", reports the tool's
// result once it has it, and otherwise echoes. Any model.Model works here.
type rulesModel struct{}

func (rulesModel) Name() string { return "rules" }

func (rulesModel) Generate(_ context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		part := &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "How can I help?"}}
		if words, ok := toolResult(req); ok {
			part.Data = &agentrunnerv1.Part_Text{Text: fmt.Sprintf("That is %v words.", words)}
		} else if text := userText(req); strings.Contains(text, "words") {
			args, _ := structArgs(map[string]any{"text": text})
			part.Data = &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Name: "word_count", Args: args}}
		} else if text != "" {
			part.Data = &agentrunnerv1.Part_Text{Text: "You said: " + text}
		}
		yield(&model.Response{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{part}}, TurnComplete: true, FinishReason: "STOP"}, nil)
	}
}

// audit is a plugin: a before_run guardrail and a tool-call counter.
type audit struct{}

func (*audit) Name() string { return "audit" }

// BeforeRun answers in place of the agents when the message says
// "password": nothing else runs, and the answer is stored as the reply.
func (*audit) BeforeRun(ctx agent.InvocationContext) (*agentrunnerv1.Content, error) {
	if strings.Contains(strings.ToLower(textOf(ctx.UserContent())), "password") {
		return &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{
			Text: "I cannot help with passwords."}}}}, nil
	}
	return nil, nil
}

// BeforeTool counts the user's tool calls; the count lands in the
// function-response event's state delta, shared by the user's sessions.
func (*audit) BeforeTool(ctx tool.Context, t tool.Tool, _ map[string]any) (map[string]any, error) {
	n := 0.0
	if v, ok := ctx.State().Get("user:tool_calls"); ok {
		n = v.GetNumberValue()
	}
	return nil, ctx.State().Set("user:tool_calls", n+1)
}
