package llmagent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
)

func TestRenderInstruction(t *testing.T) {
	state := map[string]any{"name": "Ada", "n": 3, "obj": map[string]any{"a": true}, "user:lang": "fr"}
	tests := []struct {
		instr   string
		want    string
		wantErr bool
	}{
		{instr: "no placeholders", want: "no placeholders"},
		{instr: "Hello {name}, n={n}", want: "Hello Ada, n=3"},
		{instr: "obj {obj} lang {user:lang}", want: `obj {"a":true} lang fr`},
		{instr: "optional [{missing?}]", want: "optional []"},
		{instr: "json {\"kept\": 1} and { spaced } and {not-a-key}", want: "json {\"kept\": 1} and { spaced } and {not-a-key}"},
		{instr: "required {missing}", wantErr: true},
		{instr: "notes: {artifact.notes.txt}", want: "notes: buy {milk}"},
		{instr: "user file {artifact.user:profile}", want: "user file likes tea"},
		{instr: "image {artifact.photo.png}", want: "image [artifact photo.png: image/png, 3 bytes]"},
		{instr: "linked {artifact.doc}", want: "linked [artifact doc: application/pdf at gs://b/doc.pdf]"},
		{instr: "optional [{artifact.none?}]", want: "optional []"},
		{instr: "required {artifact.none}", wantErr: true},
	}
	arts := fakeArtifacts{
		"notes.txt":    textPart("buy {milk}"), // not rendered again
		"user:profile": textPart("likes tea"),
		"photo.png":    {Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "image/png", Data: []byte{1, 2, 3}}}},
		"doc":          {Data: &agentrunnerv1.Part_FileData{FileData: &agentrunnerv1.FileData{MimeType: "application/pdf", FileUri: "gs://b/doc.pdf"}}},
	}
	for _, tc := range tests {
		t.Run(tc.instr, func(t *testing.T) {
			got, err := renderInstruction(t.Context(), tc.instr, newMapState(t, state), arts)
			if tc.wantErr {
				if !errors.Is(err, store.ErrInvalidArgument) {
					t.Fatalf("got %q, %v; want an invalid-argument error", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// fakeArtifacts holds the latest version of each artifact.
type fakeArtifacts map[string]*agentrunnerv1.Part

func (f fakeArtifacts) Save(context.Context, string, *agentrunnerv1.Part) (int64, error) {
	return 0, errors.New("read-only")
}

func (f fakeArtifacts) Load(_ context.Context, name string, version int64) (*agentrunnerv1.Part, error) {
	p, ok := f[name]
	if !ok || version != 0 {
		return nil, fmt.Errorf("artifact %s: %w", name, store.ErrNotFound)
	}
	return p, nil
}

func (f fakeArtifacts) List(context.Context) ([]*agentrunnerv1.ArtifactVersion, error) {
	return nil, nil
}

func TestHistoryContents(t *testing.T) {
	thought := &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "hmm"}, Thought: true}
	events := []*agentrunnerv1.Event{
		{Author: "user", Content: userText("hi")},
		{Author: "me", Content: modelText("hello")},
		{Author: "me", Content: modelText("partial"), Partial: true},
		{Author: "other", Content: &agentrunnerv1.Content{Role: agent.RoleModel, Parts: []*agentrunnerv1.Part{thought, textPart("I did it")}}},
		{Author: "other", Content: functionCall("c1", "lookup")},
		{Author: "other", Content: functionResponse("c1", "lookup")},
		{Author: "other", Content: &agentrunnerv1.Content{Role: agent.RoleModel, Parts: []*agentrunnerv1.Part{thought}}},
		{Author: "me", Actions: &agentrunnerv1.EventActions{Escalate: true}},
	}
	got := historyContents("me", events)
	var lines []string
	for _, c := range got {
		lines = append(lines, c.GetRole()+": "+strings.Join(texts(c), " | "))
	}
	want := []string{
		"user: hi",
		"model: hello",
		"user: For context: | [other] said: I did it",
		"user: For context: | [other] called tool `lookup` with parameters: {}",
		"user: For context: | [other] `lookup` tool returned result: {}",
	}
	if !equalStrings(lines, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func texts(c *agentrunnerv1.Content) []string {
	var out []string
	for _, p := range c.GetParts() {
		out = append(out, p.GetText())
	}
	return out
}

func TestHistoryPairsFunctionResponses(t *testing.T) {
	ev := func(author string, c *agentrunnerv1.Content) *agentrunnerv1.Event {
		return &agentrunnerv1.Event{Author: author, Content: c}
	}
	tests := []struct {
		name   string
		events []*agentrunnerv1.Event
		want   []string
	}{
		{
			name: "parallel responses merged in call order",
			events: []*agentrunnerv1.Event{
				ev("user", userText("go")),
				ev("me", content(agent.RoleModel, textPart("two calls"), call("a", "f", nil), call("b", "g", nil))),
				ev("me", content(agent.RoleUser, reply("b", "g", map[string]any{"n": 2}))),
				ev("me", content(agent.RoleUser, reply("a", "f", map[string]any{"n": 1}))),
				ev("me", modelText("done")),
			},
			want: []string{"user: go", "model: two calls | call a f | call b g", `user: response a {"n":1} | response b {"n":2}`, "model: done"},
		},
		{
			name: "a long-running response arriving later replaces the interim one, next to its call",
			events: []*agentrunnerv1.Event{
				ev("user", userText("refund")),
				ev("me", content(agent.RoleModel, call("lr", "approve", nil))),
				ev("me", content(agent.RoleUser, reply("lr", "approve", map[string]any{"status": "pending"}))),
				ev("user", content(agent.RoleUser, reply("lr", "approve", map[string]any{"ok": true}))),
			},
			want: []string{"user: refund", "model: call lr approve", `user: response lr {"ok":true}`},
		},
		{
			name: "an abandoned call and a stray response are left out",
			events: []*agentrunnerv1.Event{
				ev("user", userText("refund")),
				ev("me", content(agent.RoleModel, textPart("asking"), call("lr", "approve", nil))),
				ev("user", userText("never mind")),
				ev("user", content(agent.RoleUser, reply("zz", "approve", nil))),
			},
			want: []string{"user: refund", "model: asking", "user: never mind"},
		},
		{
			name: "other agents' calls are context",
			events: []*agentrunnerv1.Event{
				ev("user", userText("hi")),
				ev("other", content(agent.RoleModel, call("t", "transfer_to_agent", map[string]any{"agent_name": "me"}))),
				ev("other", content(agent.RoleUser, reply("t", "transfer_to_agent", nil))),
			},
			want: []string{
				"user: hi",
				"user: For context: | [other] called tool `transfer_to_agent` with parameters: {\"agent_name\":\"me\"}",
				"user: For context: | [other] `transfer_to_agent` tool returned result: {}",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := contentLines(historyContents("me", tc.events)); !equalStrings(got, tc.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestHistoryMovesLateAnswers checks that an answer that came after other
// turns is given with its call at the place it came, so that a request
// ending with it ends with the call and its answer (ADK's rearrangement of
// async function responses).
func TestHistoryMovesLateAnswers(t *testing.T) {
	ev := func(author string, c *agentrunnerv1.Content) *agentrunnerv1.Event {
		return &agentrunnerv1.Event{Author: author, Content: c}
	}
	tests := []struct {
		name   string
		events []*agentrunnerv1.Event
		want   []string
	}{
		{
			name: "a late answer comes last, with its call",
			events: []*agentrunnerv1.Event{
				ev("user", userText("refund")),
				ev("me", content(agent.RoleModel, textPart("checking"), call("lr", "approve", nil))),
				ev("user", userText("hello")),
				ev("me", modelText("hi")),
				ev("user", content(agent.RoleUser, reply("lr", "approve", map[string]any{"ok": true}))),
			},
			want: []string{"user: refund", "model: checking", "user: hello", "model: hi", "model: call lr approve", `user: response lr {"ok":true}`},
		},
		{
			name: "a late answer replaces the interim one and stays where it came in later requests",
			events: []*agentrunnerv1.Event{
				ev("user", userText("refund")),
				ev("me", content(agent.RoleModel, call("lr", "approve", nil))),
				ev("me", content(agent.RoleUser, reply("lr", "approve", map[string]any{"status": "pending"}))),
				ev("me", modelText("started")),
				ev("user", content(agent.RoleUser, textPart("here"), reply("lr", "approve", map[string]any{"ok": true}))),
				ev("me", modelText("approved")),
			},
			want: []string{"user: refund", "model: started", "user: here", "model: call lr approve", `user: response lr {"ok":true}`, "model: approved"},
		},
		{
			name: "of parallel calls only the late one moves",
			events: []*agentrunnerv1.Event{
				ev("user", userText("go")),
				ev("me", content(agent.RoleModel, call("a", "f", nil), call("b", "g", nil), call("c", "h", nil))),
				ev("me", content(agent.RoleUser, reply("a", "f", map[string]any{"n": 1}))),
				ev("me", modelText("waiting for g and h")),
				ev("user", content(agent.RoleUser, reply("c", "h", map[string]any{"n": 3}), reply("b", "g", map[string]any{"n": 2}))),
			},
			want: []string{"user: go", "model: call a f", `user: response a {"n":1}`, "model: waiting for g and h", "model: call b g | call c h", `user: response b {"n":2} | response c {"n":3}`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := contentLines(historyContents("me", tc.events)); !equalStrings(got, tc.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestCurrentTurn(t *testing.T) {
	ev := func(author string, c *agentrunnerv1.Content) *agentrunnerv1.Event {
		return &agentrunnerv1.Event{Author: author, Content: c}
	}
	old := []*agentrunnerv1.Event{ev("user", userText("old")), ev("me", modelText("old answer"))}
	tests := []struct {
		name   string
		events []*agentrunnerv1.Event
		want   []string
	}{
		{name: "the user's message", events: append(old[:2:2], ev("user", userText("new"))), want: []string{"user: new"}},
		{
			name:   "another agent's output",
			events: append(old[:2:2], ev("user", userText("new")), ev("writer", modelText("draft"))),
			want:   []string{"user: For context: | [writer] said: draft"},
		},
		{
			name: "a transfer leads back to the user's message",
			events: append(old[:2:2], ev("user", userText("new")),
				ev("root", content(agent.RoleModel, call("t", "transfer_to_agent", nil))), ev("root", content(agent.RoleUser, reply("t", "transfer_to_agent", nil)))),
			want: []string{"user: new", "user: For context: | [root] called tool `transfer_to_agent` with parameters: {}", "user: For context: | [root] `transfer_to_agent` tool returned result: {}"},
		},
		{
			name: "a long-running response leads back to the message that started the call",
			events: append(old[:2:2], ev("user", userText("new")), ev("me", content(agent.RoleModel, call("lr", "approve", nil))),
				ev("user", content(agent.RoleUser, reply("lr", "approve", map[string]any{"ok": true})))),
			want: []string{"user: new", "model: call lr approve", `user: response lr {"ok":true}`},
		},
		{
			name: "a late answer brings back the turn of its call, without the turns in between",
			events: append(old[:2:2], ev("user", userText("refund")), ev("me", content(agent.RoleModel, textPart("asking"), call("lr", "approve", nil))),
				ev("user", userText("meanwhile")), ev("me", modelText("yes?")),
				ev("user", content(agent.RoleUser, reply("lr", "approve", map[string]any{"ok": true})))),
			want: []string{"user: refund", "model: asking | call lr approve", `user: response lr {"ok":true}`},
		},
		{name: "nothing", events: nil, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := contentLines(historyContents("me", currentTurn("me", tc.events))); !equalStrings(got, tc.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
