package demo_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentrunner/agentrunner/examples/demo"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// ExampleApp hosts the demo app on a bbolt file, as `agentrunner serve`
// does, and runs one message through it. The two parallel analysts may
// answer in either order, hence the unordered output.
func ExampleApp() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "demo")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := boltstore.Open(filepath.Join(dir, "demo.db"), boltstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	reg, err := apps.NewRegistry(apps.Config{Store: db})
	if err != nil {
		log.Fatal(err)
	}
	r, err := reg.Register(demo.App())
	if err != nil {
		log.Fatal(err)
	}
	k := store.SessionKey{App: demo.Name, User: "ada", Session: "s1"}
	if _, err := db.CreateSession(ctx, k, nil); err != nil {
		log.Fatal(err)
	}
	msg := &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "hello world"}}}}
	for ev, err := range r.Run(ctx, runner.Request{UserID: k.User, SessionID: k.Session, NewMessage: msg}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s\n", ev.GetAuthor(), ev.GetContent().GetParts()[0].GetText())
	}
	// Unordered output:
	// greeter: Hello ada! This is turn 1 of this session (message 1 from you in this app). Handing over to the pipeline.
	// echo: You said: "hello world"
	// words: 2 words.
	// letters: 10 letters.
	// tick: 2...
	// tick: 1...
	// tick: Liftoff!
	// summary: Summary: 2 words, 10 letters, turn 1.
}
