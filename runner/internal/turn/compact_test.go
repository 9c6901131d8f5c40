package turn

import (
	"fmt"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// runsOf builds a session view: each run is a user message and an
// answer, sequences from start.
func runsOf(start uint64, runs int) []*agentrunnerv1.Event {
	var out []*agentrunnerv1.Event
	seq := start
	for r := range runs {
		for _, author := range []string{"user", "agent"} {
			out = append(out, &agentrunnerv1.Event{Sequence: seq, Author: author, InvocationId: fmt.Sprint("run", r),
				Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "x"}}}}})
			seq++
		}
	}
	return out
}

func TestPlanCompaction(t *testing.T) {
	for _, tt := range planCases() {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.c.planCompaction(tt.events, tt.last)
			switch {
			case tt.end == 0 && p != nil:
				t.Fatalf("planned %d..%d (%s), want none", p.start, p.end, p.reason)
			case tt.end != 0 && p == nil:
				t.Fatalf("planned nothing, want %d..%d", tt.start, tt.end)
			case p != nil && (p.start != tt.start || p.end != tt.end):
				t.Fatalf("planned %d..%d (%s), want %d..%d", p.start, p.end, p.reason, tt.start, tt.end)
			}
		})
	}
}

// TestDueAfter: whether compaction is due once a not yet stored event is
// stored (what decides holding an answer back) is what planning over the
// history with that event stored says, for every case of
// TestPlanCompaction and with each case's last event as the one held.
func TestDueAfter(t *testing.T) {
	summarizer := struct{ model.Model }{}
	for _, tt := range planCases() {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.c
			if c.dueAfter(tt.events[:len(tt.events)-1], tt.events[len(tt.events)-1], tt.last) {
				t.Fatal("due without a summarizer")
			}
			c.Summarizer = summarizer
			n := len(tt.events)
			want := c.planCompaction(tt.events, tt.last) != nil
			if got := c.dueAfter(tt.events[:n-1], tt.events[n-1], tt.last); got != want {
				t.Fatalf("dueAfter = %v, planned over the stored events: %v", got, want)
			}
			if want != (tt.end != 0) {
				t.Fatalf("planned %v, the case says %d..%d", want, tt.start, tt.end)
			}
		})
	}
}

type planCase struct {
	name       string
	c          Compaction
	events     []*agentrunnerv1.Event
	last       string
	start, end uint64 // zero: no compaction
}

func planCases() []planCase {
	withCall := runsOf(1, 4)
	// Run 2's answer calls a tool nobody has answered yet.
	withCall[5].Content.Parts = append(withCall[5].Content.Parts, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: "c1", Name: "t"}}})
	prev := &agentrunnerv1.Event{Sequence: 9, Author: "user", InvocationId: "run3", Actions: &agentrunnerv1.EventActions{Compaction: &agentrunnerv1.EventCompaction{StartSequence: 1, EndSequence: 4}}}
	afterPrev := append(runsOf(5, 2), prev)
	afterPrev = append(afterPrev, runsOf(10, 2)...)
	big := runsOf(1, 3)
	big[5].UsageMetadata = &agentrunnerv1.UsageMetadata{PromptTokenCount: 900}
	return []planCase{
		{"below the interval", Compaction{Interval: 5}, runsOf(1, 4), "run3", 0, 0},
		{"interval", Compaction{Interval: 4}, runsOf(1, 4), "run3", 1, 8},
		{"interval with overlap", Compaction{Interval: 4, Overlap: 1}, runsOf(1, 4), "run3", 1, 6},
		{"a waiting call ends the range", Compaction{Interval: 4}, withCall, "run3", 1, 5},
		{"rolls over the previous compaction", Compaction{Interval: 4, Overlap: 1}, afterPrev, "run1", 1, 11},
		{"counts only runs after the previous compaction", Compaction{Interval: 5}, afterPrev, "run1", 0, 0},
		{"token threshold keeps the last run", Compaction{TokenThreshold: 800}, big, "run2", 1, 4},
		{"below the token threshold", Compaction{TokenThreshold: 1000}, big, "run2", 0, 0},
		{"hard cap", Compaction{MaxEvents: 5}, runsOf(1, 3), "run2", 1, 4},
		{"cap off", Compaction{MaxEvents: -1}, runsOf(1, 600), "run599", 0, 0},
		{"the runner's default cap", Compaction{MaxEvents: 1000}, runsOf(1, 501), "run500", 1, 1000},
		{"the held answer reaches the cap", Compaction{MaxEvents: 5}, runsOf(1, 3)[:6], "run2", 1, 4},
		{"the held answer does not reach it", Compaction{MaxEvents: 6}, runsOf(1, 3), "run2", 0, 0},
		{"the held answer has the big prompt", Compaction{TokenThreshold: 800}, big, "run2", 1, 4},
	}
}
