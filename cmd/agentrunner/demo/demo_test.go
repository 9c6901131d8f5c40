package demo

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

func TestDemo(t *testing.T) {
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "demo.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	reg, err := apps.NewRegistry(apps.Config{Store: db})
	if err != nil {
		t.Fatal(err)
	}
	r, err := reg.Register(App())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(App()); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("second registration: %v", err)
	}
	k := store.SessionKey{App: Name, User: "ada", Session: "s1"}
	if _, err := db.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		msg  string
		want []string // the parallel analysts' two lines are compared as a set
	}{
		{
			msg: "hello big world",
			want: []string{
				"greeter: Hello ada! This is turn 1 of this session (message 1 from you in this app). Handing over to the pipeline.",
				`echo: You said: "hello big world"`,
				"letters: 13 letters.",
				"words: 3 words.",
				"tick: 3...", "tick: 2...", "tick: 1...", "tick: Liftoff!",
				"summary: Summary: 3 words, 13 letters, turn 1.",
			},
		},
		{
			msg: "again",
			want: []string{
				"greeter: Hello ada! This is turn 2 of this session (message 2 from you in this app). Handing over to the pipeline.",
				`echo: You said: "again"`,
				"letters: 5 letters.",
				"words: 1 word.",
				"tick: 1...", "tick: Liftoff!",
				"summary: Summary: 1 word, 5 letters, turn 2.",
			},
		},
	}
	for _, tc := range tests {
		var got []string
		for ev, err := range r.Run(t.Context(), runner.Request{UserID: k.User, SessionID: k.Session, NewMessage: &agentrunnerv1.Content{
			Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: tc.msg}}},
		}}) {
			if err != nil {
				t.Fatalf("%s: %v", tc.msg, err)
			}
			got = append(got, ev.GetAuthor()+": "+ev.GetContent().GetParts()[0].GetText())
		}
		if len(got) > 3 {
			slices.Sort(got[2:4]) // parallel branches
		}
		if !slices.Equal(got, tc.want) {
			t.Fatalf("%s:\n got %q\nwant %q", tc.msg, got, tc.want)
		}
	}
	sess, _, err := db.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for key := range sess.GetState().GetFields() {
		if key == "temp:countdown" {
			t.Fatal("temp: key stored")
		}
	}
	if got := sess.GetState().GetFields()["user:visits"].GetNumberValue(); got != 2 {
		t.Errorf("user:visits = %v", got)
	}
	info := reg.List()[0]
	if info.GetName() != Name || info.GetRootAgent().GetName() != "greeter" || len(info.GetRootAgent().GetSubAgents()[0].GetSubAgents()) != 4 {
		t.Errorf("app info %v", info)
	}
}
