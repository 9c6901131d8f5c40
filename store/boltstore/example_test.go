package boltstore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// A session with scoped state: "user:" keys follow the user to their other
// sessions, "temp:" keys are never stored.
func Example() {
	dir, err := os.MkdirTemp("", "boltstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := boltstore.Open(filepath.Join(dir, "agentrunner.db"), boltstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	k := store.SessionKey{App: "support", User: "alice", Session: "s1"}
	if _, err := s.CreateSession(ctx, k, nil); err != nil {
		log.Fatal(err)
	}
	delta, _ := structpb.NewStruct(map[string]any{"user:lang": "fr", "topic": "billing", "temp:scratch": 1})
	ev, err := s.AppendEvent(ctx, k, &agentrunnerv1.Event{
		Author:  "triage",
		Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "Bonjour !"}}}},
		Actions: &agentrunnerv1.EventActions{StateDelta: delta},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("appended sequence", ev.GetSequence())

	// Another session of the same user sees the user: key only.
	k2 := store.SessionKey{App: "support", User: "alice", Session: "s2"}
	if _, err := s.CreateSession(ctx, k2, nil); err != nil {
		log.Fatal(err)
	}
	for _, key := range []store.SessionKey{k, k2} {
		sess, events, err := s.GetSession(ctx, key, store.GetOptions{NumRecentEvents: 10})
		if err != nil {
			log.Fatal(err)
		}
		st := sess.GetState().AsMap()
		fmt.Printf("%s: %d events, lang=%v topic=%v scratch=%v\n", key.Session, len(events), st["user:lang"], st["topic"], st["temp:scratch"])
	}
	// Output:
	// appended sequence 1
	// s1: 1 events, lang=fr topic=billing scratch=<nil>
	// s2: 0 events, lang=fr topic=<nil> scratch=<nil>
}
