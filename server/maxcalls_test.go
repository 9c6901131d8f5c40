package server

import (
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model/offline"
)

// TestMaxLLMCallsNegativeMeansNoLimit: run.proto documents a negative
// run_config.max_llm_calls as no limit, and the server agrees: a loop of
// three model calls runs them all with -1, and stops at the limit with 2.
func TestMaxLLMCallsNegativeMeansNoLimit(t *testing.T) {
	app := func(t *testing.T) apps.App {
		chatty := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "chatty", Model: offline.New(offline.Config{})}))
		root := must[agent.Agent](t)(workflow.NewLoop(workflow.LoopConfig{Name: "thrice", SubAgents: []agent.Agent{chatty}, MaxIterations: 3}))
		return apps.App{Name: "calls", Root: root}
	}
	e := newEnv(t, withRunnerApps(t, app))
	for _, tc := range []struct {
		max     int32
		answers int
		failed  bool
	}{{-1, 3, false}, {2, 2, true}} {
		session := "s" + string(rune('a'+tc.answers))
		e.createSession(t, "calls", "u1", session)
		req := runReq("calls", session, "hello")
		req.RunConfig = &agentrunnerv1.RunConfig{MaxLlmCalls: tc.max}
		res := e.run(t, t.Context(), req)
		if n := len(res.answers); n != tc.answers {
			t.Errorf("max_llm_calls %d: %d model answers, want %d (status %v)", tc.max, n, tc.answers, res.status)
		}
		if failed := res.status != nil || len(res.errors) > 0; failed != tc.failed {
			t.Errorf("max_llm_calls %d: status %v, in-band %v; want failed %v", tc.max, res.status, res.errors, tc.failed)
		}
	}
}
