package runner

import (
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/store"
)

// TestRewoundEventsLeaveTheModelsRequest: after a rewind (an event the
// store appends, store.PlanRewind), the next run's model request holds
// the conversation before the rewound run and the new message, not the
// rewound run's; the state it sees is the rewound one.
func TestRewoundEventsLeaveTheModelsRequest(t *testing.T) {
	m := &fakeModel{name: "fake", reply: "answer"}
	root := llm(t, llmagent.Config{Name: "root", Model: m, Instruction: "Cart: {cart?}"})
	r, db, k := newTestRunner(t, root)
	run := func(text string, delta map[string]any) string {
		t.Helper()
		req := request(k, text)
		if delta != nil {
			req.StateDelta = mustStruct(t, delta)
		}
		res := mustRun(t, r, req)
		return res.events[0].GetInvocationId()
	}
	run("a red bike", map[string]any{"cart": "red"})
	second := run("make it blue", map[string]any{"cart": "blue"})
	plan, err := store.PlanRewind(t.Context(), db, k, second, func() string { return "rw" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendRewind(t.Context(), k, plan); err != nil {
		t.Fatal(err)
	}
	run("make it green", nil)
	calls := m.calls()
	last := calls[len(calls)-1]
	var texts []string
	for _, c := range last.Contents {
		texts = append(texts, textOf(c))
	}
	got := strings.Join(texts, " | ")
	if want := "a red bike | answer #1 | make it green"; got != want {
		t.Errorf("request after the rewind: %q, want %q", got, want)
	}
	if !strings.Contains(last.SystemInstruction, "Cart: red") {
		t.Errorf("instruction after the rewind = %q, want the rewound cart (red)", last.SystemInstruction)
	}
}

// TestSelectAgentAfterRewind: the agent that answered in a rewound run
// does not take the next message; the one before the rewound run does.
func TestSelectAgentAfterRewind(t *testing.T) {
	for _, rewound := range []bool{false, true} {
		r, db, k := newTestRunner(t, selectionTree(t))
		history := []*agentrunnerv1.Event{
			{Author: "user", InvocationId: "a", Content: userText("hello")},
			{Author: "root", InvocationId: "a", Content: modelText("hi")},
			{Author: "user", InvocationId: "b", Content: userText("billing please")},
			{Author: "helper", InvocationId: "b", Content: modelText("helper here")},
		}
		if rewound {
			history = append(history, &agentrunnerv1.Event{Author: "user", InvocationId: "rw", Actions: &agentrunnerv1.EventActions{RewindBeforeInvocationId: "b"}})
		}
		for _, ev := range history {
			if _, err := db.AppendEvent(t.Context(), k, ev); err != nil {
				t.Fatal(err)
			}
		}
		res := mustRun(t, r, request(k, "again"))
		want := map[bool]string{false: "helper", true: "root"}[rewound]
		if len(res.events) != 1 || res.events[0].GetAuthor() != want {
			t.Errorf("rewound %t: answered by %v, want %s", rewound, summary(res.events), want)
		}
	}
}
