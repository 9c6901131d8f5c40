package server

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
)

// transferTreeApp is an offline-model app named name, with compaction
// (a YAML flow mapping, or "" for none) over a tree two levels deep:
// coordinator > helper > {worker, strict}; strict never hands back, so
// selection passes over it.
func transferTreeApp(name, compaction string) func(t *testing.T) apps.App {
	return func(t *testing.T) apps.App {
		section := ""
		if compaction != "" {
			section = "    compaction: " + compaction + "\n"
		}
		cfg, err := apps.Parse("apps.yaml", []byte(`
apps:
  - name: `+name+`
`+section+`    root_agent:
      name: coordinator
      description: Routes.
      llm: { model: offline }
      sub_agents:
        - name: helper
          description: Helps.
          llm: { model: offline }
          sub_agents:
            - { name: worker, description: Works., llm: { model: offline } }
            - { name: strict, description: Never hands back., llm: { model: offline, disallow_transfer_to_parent: true } }
`))
		if err != nil {
			t.Fatal(err)
		}
		m := offline.New(offline.Config{})
		built, err := apps.Build(t.Context(), cfg, func(context.Context, string) (model.Model, error) { return m, nil })
		if err != nil {
			t.Fatal(err)
		}
		return built[0]
	}
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
	settings := []struct{ name, compaction string }{
		{"interval1", "{interval: 1, overlap: 0}"},
		{"interval2", "{interval: 2, overlap: 0}"},
		{"interval3overlap1", "{interval: 3, overlap: 1}"},
		{"tokens", "{token_threshold: 1}"},
		{"cap", "{max_events: 2}"},
	}
	builds := []func(*testing.T) apps.App{transferTreeApp("plain", "{max_events: -1}")}
	for _, s := range settings {
		builds = append(builds, transferTreeApp(s.name, s.compaction))
	}
	e := newEnv(t, withRunnerApps(t, builds...))

	// answerers runs the messages in a new session of app and returns the
	// agent that answered each, with the number of compactions.
	answerers := func(t *testing.T, app string) ([]string, int) {
		t.Helper()
		e.createSession(t, app, "u1", "s1")
		var got []string
		compactions := 0
		for i, msg := range messages {
			res := e.run(t, t.Context(), runReq(app, "s1", msg))
			if res.status != nil || len(res.errors) > 0 || len(res.answers) == 0 {
				t.Fatalf("%s turn %d %q: %v %v %q", app, i+1, msg, res.status, res.errors, res.kinds)
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
	want, _ := answerers(t, "plain")
	// The scenario must exercise what it claims: a sticky agent two
	// levels deep, and strict passed over for worker.
	if fmt.Sprint(want) != "[coordinator coordinator helper helper worker worker worker worker helper]" {
		t.Fatalf("without compaction the answerers are %v", want)
	}
	for _, s := range settings {
		t.Run(s.name, func(t *testing.T) {
			got, compactions := answerers(t, s.name)
			if compactions == 0 {
				t.Fatalf("no compaction in %d runs", len(messages))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("with compaction %s the answerers are\n%v\nwithout\n%v", s.compaction, got, want)
			}
		})
	}
}
