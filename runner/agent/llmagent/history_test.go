package llmagent

import (
	"fmt"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// stepHistory is modelHistory made step by step, as it was before the one
// pass: the reference the one pass must match.
func stepHistory(self string, events []*agentrunnerv1.Event) []*agentrunnerv1.Content {
	return historyContents(self, withSummary(agent.WithoutRewound(events)))
}

func historyEvent(author, inv string, seq uint64, parts ...*agentrunnerv1.Part) *agentrunnerv1.Event {
	role := agent.RoleModel
	if author == agent.UserAuthor {
		role = agent.RoleUser
	}
	return &agentrunnerv1.Event{Author: author, InvocationId: inv, Sequence: seq, Content: &agentrunnerv1.Content{Role: role, Parts: parts}}
}

func histText(s string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: agent.RoleModel, Parts: []*agentrunnerv1.Part{textPart(s)}}
}

func callPart(id, name string) *agentrunnerv1.Part {
	args, _ := structpb.NewStruct(map[string]any{"q": "x"})
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: name, Args: args}}}
}

func answerPart(id, name string) *agentrunnerv1.Part {
	resp, _ := structpb.NewStruct(map[string]any{"ok": true, "n": 2})
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name, Response: resp}}}
}

// TestModelHistoryOnePass checks the one pass against the steps it
// replaces on histories with what each step handles: partial and empty
// events, other agents, confirmations, function calls with and without
// ids, late answers, rewinds and compactions; and that the bytes it
// counts on the way are those promptTokens counts.
func TestModelHistoryOnePass(t *testing.T) {
	const self = "helper"
	confirm := builtin.RequestConfirmationName
	base := []*agentrunnerv1.Event{
		historyEvent(agent.UserAuthor, "r1", 1, textPart("hello")),
		{Author: self, InvocationId: "r1", Sequence: 2, Partial: true, Content: histText("hel")},
		historyEvent(self, "r1", 3, textPart("hello to you")),
		{Author: self, InvocationId: "r1", Sequence: 4},
		historyEvent("other", "r1", 5, textPart("I am other"), &agentrunnerv1.Part{Thought: true, Data: &agentrunnerv1.Part_Text{Text: "hmm"}}, callPart("", "lookup")),
	}
	plainCalls := append(base[:len(base):len(base)],
		historyEvent(self, "r2", 6, callPart("", "lookup")),
		historyEvent(self, "r2", 7, answerPart("", "lookup")))
	confirms := append(base[:len(base):len(base)],
		historyEvent(self, "r2", 6, callPart("", confirm), textPart("may I?")),
		historyEvent(agent.UserAuthor, "r2", 7, answerPart("", confirm)),
		historyEvent("other", "r2", 8, callPart("", confirm)))
	idCalls := append(base[:len(base):len(base)],
		historyEvent(self, "r2", 6, callPart("c1", "lookup"), callPart("c2", "lookup"), callPart("c9", "lookup")),
		historyEvent(self, "r2", 7, answerPart("c1", "lookup")),
		historyEvent(agent.UserAuthor, "r3", 8, textPart("and then?")),
		historyEvent(self, "r3", 9, textPart("waiting")),
		historyEvent(agent.UserAuthor, "r4", 10, answerPart("c2", "lookup"), answerPart("orphan", "lookup")),
		historyEvent(self, "r5", 11, callPart("k1", confirm)),
		historyEvent(agent.UserAuthor, "r5", 12, answerPart("k1", confirm)))
	onlyResponses := append(base[:len(base):len(base)],
		historyEvent(agent.UserAuthor, "r2", 6, answerPart("nobody", "lookup"), textPart("kept")))
	rewound := append(base[:len(base):len(base)],
		historyEvent(agent.UserAuthor, "r2", 6, textPart("forget this")),
		historyEvent(self, "r2", 7, textPart("forgotten")),
		&agentrunnerv1.Event{Author: agent.UserAuthor, InvocationId: "r3", Sequence: 8, Actions: &agentrunnerv1.EventActions{RewindBeforeInvocationId: "r2"}},
		historyEvent(agent.UserAuthor, "r4", 9, textPart("again")))
	compacted := append(base[:len(base):len(base)],
		&agentrunnerv1.Event{Author: "", InvocationId: "r2", Sequence: 6, Actions: &agentrunnerv1.EventActions{Compaction: &agentrunnerv1.EventCompaction{StartSequence: 1, EndSequence: 3, Summary: histText("they said hello")}}},
		historyEvent(agent.UserAuthor, "r3", 7, textPart("after")))
	for name, events := range map[string][]*agentrunnerv1.Event{
		"empty": nil, "base": base, "plain calls": plainCalls, "confirmations": confirms, "ids": idCalls,
		"only responses": onlyResponses, "rewound": rewound, "compacted": compacted,
	} {
		t.Run(name, func(t *testing.T) {
			h := modelHistory(self, events, false)
			want := stepHistory(self, events)
			if len(h.contents) != len(want) {
				t.Fatalf("%d contents, want %d:\n%v\n%v", len(h.contents), len(want), h.contents, want)
			}
			for i := range want {
				if !proto.Equal(h.contents[i], want[i]) {
					t.Errorf("content %d = %v, want %v", i, h.contents[i], want[i])
				}
			}
			req := &model.Request{SystemInstruction: "be brief", Contents: h.contents}
			counted := promptTokens(req, history{contents: h.contents, bytes: -1})
			if got := promptTokens(req, h); got != counted {
				t.Errorf("promptTokens with the pass's bytes = %d, counted again %d", got, counted)
			}
			// Contents copied (as for hooks) are counted again, not taken
			// from the pass.
			copied := &model.Request{SystemInstruction: "be brief", Contents: append(copyContents(h.contents), histText("added by a hook"))}
			if got, want := promptTokens(copied, h), counted+len("added by a hook")/4; got < want {
				t.Errorf("promptTokens of changed contents = %d, want at least %d", got, want)
			}
		})
	}
}

// BenchmarkModelHistory measures the history of one model call in a
// session of n events (user messages and answers, no tools), the work
// every call of a long session does.
func BenchmarkModelHistory(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		events := make([]*agentrunnerv1.Event, 0, n)
		for i := range n {
			author := agent.UserAuthor
			if i%2 == 1 {
				author = "answer"
			}
			events = append(events, historyEvent(author, fmt.Sprintf("r%d", i/2), uint64(i+1), textPart(fmt.Sprintf("message %d with a few words in it", i))))
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h := modelHistory("answer", events, false)
				_ = promptTokens(&model.Request{Contents: h.contents}, h)
			}
		})
	}
}

// BenchmarkStepHistory is BenchmarkModelHistory made step by step, as
// before the one pass (the contents counted again for promptTokens).
func BenchmarkStepHistory(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		events := make([]*agentrunnerv1.Event, 0, n)
		for i := range n {
			author := agent.UserAuthor
			if i%2 == 1 {
				author = "answer"
			}
			events = append(events, historyEvent(author, fmt.Sprintf("r%d", i/2), uint64(i+1), textPart(fmt.Sprintf("message %d with a few words in it", i))))
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c := stepHistory("answer", events)
				_ = promptTokens(&model.Request{Contents: c}, history{contents: c, bytes: -1})
			}
		})
	}
}

// TestHistoryMemo checks the memo's histories against the steps while a
// session grows in its array, one event at a time, through every kind of
// event the one pass handles and then a rewind and a compaction; that a
// history handed out does not change as the session grows; and that a
// new array is read afresh.
func TestHistoryMemo(t *testing.T) {
	const self = "helper"
	confirm := builtin.RequestConfirmationName
	all := []*agentrunnerv1.Event{
		historyEvent(agent.UserAuthor, "r1", 1, textPart("hello")),
		{Author: self, InvocationId: "r1", Sequence: 2, Partial: true, Content: histText("hel")},
		historyEvent(self, "r1", 3, textPart("hello to you")),
		historyEvent("other", "r1", 4, textPart("I am other"), callPart("", "lookup")),
		historyEvent(self, "r2", 5, callPart("", confirm), textPart("may I?")),
		historyEvent(agent.UserAuthor, "r2", 6, answerPart("", confirm)),
		historyEvent(self, "r3", 7, callPart("c1", "lookup"), callPart("c2", "lookup")),
		historyEvent(self, "r3", 8, answerPart("c1", "lookup")),
		historyEvent(agent.UserAuthor, "r4", 9, textPart("and then?")),
		historyEvent(agent.UserAuthor, "r4", 10, answerPart("c2", "lookup")),
		&agentrunnerv1.Event{Author: agent.UserAuthor, InvocationId: "r5", Sequence: 11, Actions: &agentrunnerv1.EventActions{RewindBeforeInvocationId: "r4"}},
		historyEvent(agent.UserAuthor, "r6", 12, textPart("again")),
		{InvocationId: "r7", Sequence: 13, Actions: &agentrunnerv1.EventActions{Compaction: &agentrunnerv1.EventCompaction{StartSequence: 1, EndSequence: 3, Summary: histText("they said hello")}}},
		historyEvent(agent.UserAuthor, "r8", 14, textPart("after")),
	}
	check := func(t *testing.T, h history, events []*agentrunnerv1.Event) {
		t.Helper()
		want := stepHistory(self, events)
		if len(h.contents) != len(want) {
			t.Fatalf("%d events: %d contents, want %d", len(events), len(h.contents), len(want))
		}
		for i := range want {
			if !proto.Equal(h.contents[i], want[i]) {
				t.Fatalf("%d events: content %d = %v, want %v", len(events), i, h.contents[i], want[i])
			}
		}
		if h.bytes >= 0 {
			req := &model.Request{Contents: h.contents}
			if got, counted := promptTokens(req, h), promptTokens(req, history{contents: h.contents, bytes: -1}); got != counted {
				t.Errorf("%d events: promptTokens %d, counted again %d", len(events), got, counted)
			}
		}
	}
	var m historyMemo
	session := make([]*agentrunnerv1.Event, 0, len(all)) // grows in place
	var handed []history
	for _, ev := range all {
		session = append(session, ev)
		view := session[:len(session):len(session)] // as the invocation shares it
		h := m.history(self, view)
		check(t, h, view)
		if len(handed) > 0 {
			// A model that appends to its request's contents appends to
			// its own copy, not to the memo's.
			_ = append(handed[len(handed)-1].contents, histText("appended by a model"))
		}
		handed = append(handed, h)
	}
	for i, h := range handed {
		check(t, h, all[:i+1]) // unchanged by the calls after it
	}
	// The same events in a new array: read afresh, the same history.
	fresh := append([]*agentrunnerv1.Event(nil), all[:9]...)
	check(t, m.history(self, fresh), fresh)
	// Another agent's name on the same array is not this one's history.
	other := m.history("other", fresh)
	if want := stepHistory("other", fresh); len(other.contents) != len(want) || !proto.Equal(other.contents[1], want[1]) {
		t.Errorf("another agent's history: %v, want %v", other.contents, want)
	}
}

// BenchmarkHistoryMemo is BenchmarkModelHistory for a session the agent
// called its model in before (the memo knows its events): what the next
// call of a long session costs.
func BenchmarkHistoryMemo(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		events := make([]*agentrunnerv1.Event, 0, n)
		for i := range n {
			author := agent.UserAuthor
			if i%2 == 1 {
				author = "answer"
			}
			events = append(events, historyEvent(author, fmt.Sprintf("r%d", i/2), uint64(i+1), textPart(fmt.Sprintf("message %d with a few words in it", i))))
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var m historyMemo
			m.history("answer", events)
			b.ReportAllocs()
			for b.Loop() {
				h := m.history("answer", events)
				_ = promptTokens(&model.Request{Contents: h.contents}, h)
			}
		})
	}
}

// TestHistoryMemoBounds checks that the memo keeps at most its bounds of
// entries and events, however many histories it saw.
func TestHistoryMemoBounds(t *testing.T) {
	var m historyMemo
	var arrays [][]*agentrunnerv1.Event // kept alive: only the bounds drop entries
	for i := range memoMaxEntries + 10 {
		events := []*agentrunnerv1.Event{historyEvent(agent.UserAuthor, "r", uint64(i+1), textPart("hi"))}
		arrays = append(arrays, events)
		if h := m.history("answer", events); len(h.contents) != 1 {
			t.Fatalf("history %d: %v", i, h.contents)
		}
	}
	big := make([]*agentrunnerv1.Event, memoMaxEvents-5)
	for i := range big {
		big[i] = historyEvent(agent.UserAuthor, "r", uint64(i+1), textPart("hi"))
	}
	m.history("answer", big)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) > memoMaxEntries || m.events > memoMaxEvents {
		t.Errorf("%d entries of %d events, bounds %d and %d", len(m.entries), m.events, memoMaxEntries, memoMaxEvents)
	}
	n := 0
	for _, e := range m.entries {
		n += e.n
	}
	if n != m.events {
		t.Errorf("entries hold %d events, the memo counts %d", n, m.events)
	}
	_ = arrays
}
