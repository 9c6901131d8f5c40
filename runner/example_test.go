package runner_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log"
	"os"
	"path/filepath"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

func text(s string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}
}

// A custom agent served by a Runner over a bbolt file: each complete event
// arrives with its sequence, after it is stored.
func ExampleRunner_Run() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := boltstore.Open(filepath.Join(dir, "agentrunner.db"), boltstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	echo, err := agent.New(agent.Config{
		Name: "echo",
		Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
			return func(yield func(*agentrunnerv1.Event, error) bool) {
				said := ctx.UserContent().GetParts()[0].GetText()
				_ = ctx.State().Set("last", said) // lands in the event below
				yield(&agentrunnerv1.Event{Content: text("you said " + said)}, nil)
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "demo", Root: echo, Store: db})
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	k := store.SessionKey{App: "demo", User: "ada", Session: "s1"}
	if _, err := db.CreateSession(ctx, k, nil); err != nil {
		log.Fatal(err)
	}
	req := runner.Request{UserID: "ada", SessionID: "s1", NewMessage: text("hello")}
	for ev, err := range r.Run(ctx, req) {
		var agentErr *agent.AgentError
		switch {
		case errors.As(err, &agentErr):
			fmt.Println("agent error:", agentErr) // in-band; the run goes on
			continue
		case err != nil:
			log.Fatal(err) // terminal: always the last element
		}
		fmt.Println(ev.GetSequence(), ev.GetAuthor(), ev.GetContent().GetParts()[0].GetText())
	}
	sess, _, err := db.GetSession(ctx, k, store.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("state:", sess.GetState().AsMap())
	// Output:
	// 2 echo you said hello
	// state: map[last:hello]
}
