package runner_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model/offline"
)

// transferTree is a runner over a tree of offline-model agents two levels
// deep, coordinator > helper > {worker, strict}, compacted as c says by
// the same model; strict never hands back, so selection passes over it.
func transferTree(t *testing.T, c runner.Compaction) *feature {
	m := offline.New(offline.Config{})
	mk := func(cfg llmagent.Config) agent.Agent {
		cfg.Model = m
		return must[agent.Agent](t)(llmagent.New(cfg))
	}
	worker := mk(llmagent.Config{Name: "worker", Description: "Works."})
	strict := mk(llmagent.Config{Name: "strict", Description: "Never hands back.", DisallowTransferToParent: true})
	helper := mk(llmagent.Config{Name: "helper", Description: "Helps.", SubAgents: []agent.Agent{worker, strict}})
	root := mk(llmagent.Config{Name: "coordinator", Description: "Routes.", SubAgents: []agent.Agent{helper}})
	c.Summarizer = m
	return newFeature(t, runner.Config{Root: root, Compaction: c})
}

// TestCompactionKeepsAgentSelection: whatever the compaction settings,
// each message is answered by the agent that answers it without
// compaction (seed 004: selection scans the session's events backwards),
// though the events that name that agent were compacted: transfers
// inside the compacted range, an agent two levels deep, and a
// non-resumable agent passed over for the one before it.
func TestCompactionKeepsAgentSelection(t *testing.T) {
	messages := []string{
		"hello",
		"transfer to helper",
		"how are you",
		"transfer to worker",
		"and now",
		"transfer to strict", // worker hands over to its peer, which keeps no turn
		"still there",        // strict is passed over: worker answers
		"transfer to helper",
		"goodbye",
	}
	// answerers runs the messages in a new session of f and returns the
	// agent that answered each, with the number of compactions.
	answerers := func(t *testing.T, f *feature) ([]string, int) {
		t.Helper()
		f.session(t, "s1")
		var got []string
		compactions := 0
		for i, msg := range messages {
			res := f.run(t, ask("s1", msg))
			if res.err != nil || len(res.errs) > 0 || len(res.answers) == 0 {
				t.Fatalf("turn %d %q: %v %v %q", i+1, msg, res.err, res.errs, res.kinds)
			}
			got = append(got, res.answers[0])
			for _, ev := range res.events {
				if ev.GetActions().GetCompaction() != nil {
					compactions++
				}
			}
		}
		return got, compactions
	}
	want, _ := answerers(t, transferTree(t, runner.Compaction{MaxEvents: -1}))
	// The scenario must exercise what it claims: a sticky agent two
	// levels deep, and strict passed over for worker.
	if fmt.Sprint(want) != "[coordinator coordinator helper helper worker worker worker worker helper]" {
		t.Fatalf("without compaction the answerers are %v", want)
	}
	settings := []struct {
		name string
		c    runner.Compaction
	}{
		{"interval1", runner.Compaction{Interval: 1}},
		{"interval2", runner.Compaction{Interval: 2}},
		{"interval3overlap1", runner.Compaction{Interval: 3, Overlap: 1}},
		{"tokens", runner.Compaction{TokenThreshold: 1}},
		{"cap", runner.Compaction{MaxEvents: 2}},
	}
	for _, s := range settings {
		t.Run(s.name, func(t *testing.T) {
			got, compactions := answerers(t, transferTree(t, s.c))
			if compactions == 0 {
				t.Fatalf("no compaction in %d runs", len(messages))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("with compaction %+v the answerers are\n%v\nwithout\n%v", s.c, got, want)
			}
		})
	}
}
