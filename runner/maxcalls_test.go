package runner_test

import (
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model/offline"
)

// TestMaxLLMCallsNegativeMeansNoLimit: run.proto documents a negative
// run_config.max_llm_calls as no limit, and the runner agrees: a loop of
// three model calls runs them all with -1, and stops at the limit with 2.
func TestMaxLLMCallsNegativeMeansNoLimit(t *testing.T) {
	chatty := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "chatty", Model: offline.New(offline.Config{})}))
	root := must[agent.Agent](t)(workflow.NewLoop(workflow.LoopConfig{Name: "thrice", SubAgents: []agent.Agent{chatty}, MaxIterations: 3}))
	f := newFeature(t, runner.Config{Root: root})
	for _, tc := range []struct {
		max     int32
		answers int
		failed  bool
	}{{-1, 3, false}, {2, 2, true}} {
		session := "s" + string(rune('a'+tc.answers))
		f.session(t, session)
		req := ask(session, "hello")
		req.Config = &agentrunnerv1.RunConfig{MaxLlmCalls: tc.max}
		res := f.run(t, req)
		if n := len(res.answers); n != tc.answers {
			t.Errorf("max_llm_calls %d: %d model answers, want %d (error %v)", tc.max, n, tc.answers, res.err)
		}
		if failed := res.err != nil || len(res.errs) > 0; failed != tc.failed {
			t.Errorf("max_llm_calls %d: error %v, in-band %v; want failed %v", tc.max, res.err, res.errs, tc.failed)
		}
	}
}
