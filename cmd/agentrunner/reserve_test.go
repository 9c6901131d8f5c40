package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

// reserveConfig: loops of three priced calls under a user's daily budget
// of %[1]d tokens, one agent with an output cap, one without.
const reserveConfig = `
models:
  - name: priced
    provider: offline
    price: {currency: USD, input: 2, output: 10}
apps:
  - name: capped_out
    budgets: {user_daily: {tokens: %[1]d}}
    root_agent:
      name: thrice
      loop: {max_iterations: 3}
      sub_agents:
        - {name: chatty, llm: {model: priced, max_output_tokens: 32}}
  - name: uncapped_out
    budgets: {user_daily: {tokens: %[1]d}}
    root_agent:
      name: thrice
      loop: {max_iterations: 3}
      sub_agents:
        - {name: chatty, llm: {model: priced}}
`

// TestReservedBudgets (issue 46, "budgets check, then spend"): 32 and 96
// runs of one user at once, on bbolt and on two PostgreSQL replicas,
// against a daily budget: with an output cap the spend never passes it;
// without one, by at most one call in all (it was one per run in flight).
func TestReservedBudgets(t *testing.T) {
	const limit = 600
	for _, st := range []struct {
		name     string
		replicas int
		data     func(t *testing.T) string
	}{
		{"bbolt", 1, func(t *testing.T) string { return filepath.Join(t.TempDir(), "agentrunner.db") }},
		{"postgres-2-replicas", 2, func(t *testing.T) string { return pg.URL(t) }},
	} {
		for _, runs := range []int{32, 96} {
			for _, app := range []string{"capped_out", "uncapped_out"} {
				t.Run(fmt.Sprintf("%s/%d/%s", st.name, runs, app), func(t *testing.T) {
					spent, maxCall := reservedRuns(t, st.data(t), st.replicas, runs, app, limit)
					t.Logf("%s, %d runs, %s: %d tokens spent against %d (largest call %d)", st.name, runs, app, spent, limit, maxCall)
					switch {
					case app == "capped_out" && spent > limit:
						t.Fatalf("spent %d tokens past a budget of %d with an output cap", spent, limit)
					case spent > limit+maxCall:
						t.Fatalf("spent %d tokens: more than one call past the budget of %d", spent, limit)
					}
				})
			}
		}
	}
}

// reservedRuns runs runs loops of app at once over replicas servers on
// data and returns the tokens their sessions spent and the largest call.
func reservedRuns(t *testing.T, data string, replicas, runs int, app string, limit int) (spent, maxCall int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "apps.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, reserveConfig, limit), 0o600); err != nil {
		t.Fatal(err)
	}
	var rcs []servicev1.RunnerServiceClient
	var sc servicev1.SessionServiceClient
	for range replicas {
		_, rc, s, _ := stoppableRunsServer(t, data, path)
		rcs, sc = append(rcs, rc), s
	}
	for i := range runs {
		sessionOf(t, sc, app, "u1", fmt.Sprintf("s%d", i))
	}
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			_, err := lastRecord(t, rcs[i%replicas], &servicev1.RunRequest{AppName: app, UserId: "u1", SessionId: fmt.Sprintf("s%d", i), NewMessage: userText("hello, how are you")})
			if err != nil && status.Code(err) != codes.ResourceExhausted {
				t.Errorf("run %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i := range runs {
		got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: app, UserId: "u1", SessionId: fmt.Sprintf("s%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range got.GetEvents() {
			n := int64(ev.GetUsageMetadata().GetTotalTokenCount())
			spent, maxCall = spent+n, max(maxCall, n)
		}
	}
	return spent, maxCall
}
