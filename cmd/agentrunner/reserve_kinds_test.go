package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// reserveKindLimits are the budgets of reserveKindsConfig's apps: in
// tokens, and in USD (micro-dollars: a call costs prompt*2 + answer*10).
var reserveKindLimits = map[string]struct{ tokens, micros int64 }{
	"app":     {600, 2000},
	"session": {150, 1000},
	"run":     {60, 800},
}

// reserveKindsConfig has an app per budget (app_daily, session, run),
// unit (tokens, cost) and output cap (capped, uncapped). The app budget's
// runs are loops of three calls, each of another user; the session and
// run budgets' runs fan out to four parallel branches of two calls each.
func reserveKindsConfig() string {
	var b strings.Builder
	b.WriteString("models:\n  - {name: priced, provider: offline, price: {currency: USD, input: 2, output: 10}}\napps:\n")
	for _, kind := range []string{"app", "session", "run"} {
		l := reserveKindLimits[kind]
		for _, unit := range []string{"tokens", "cost"} {
			limit := fmt.Sprint(l.tokens)
			if unit == "cost" {
				limit = fmt.Sprintf("%.6f", float64(l.micros)/1e6)
			}
			budget := map[string]string{"app": "app_daily", "session": "session", "run": "run"}[kind]
			for _, capped := range []bool{true, false} {
				llm := "{model: priced}"
				name := fmt.Sprintf("%s_%s_uncapped", kind, unit)
				if capped {
					llm, name = "{model: priced, max_output_tokens: 32}", fmt.Sprintf("%s_%s_capped", kind, unit)
				}
				fmt.Fprintf(&b, "  - name: %s\n    budgets: {%s: {%s: %s}}\n", name, budget, unit, limit)
				if kind == "app" {
					fmt.Fprintf(&b, "    root_agent: {name: thrice, loop: {max_iterations: 3}, sub_agents: [{name: chatty, llm: %s}]}\n", llm)
					continue
				}
				b.WriteString("    root_agent:\n      name: fan\n      parallel: {}\n      sub_agents:\n")
				for i := range 4 {
					fmt.Fprintf(&b, "        - {name: b%d, loop: {max_iterations: 2}, sub_agents: [{name: c%d, llm: %s}]}\n", i, i, llm)
				}
			}
		}
	}
	return b.String()
}

// TestReservedBudgetKinds (issue 46): 32 and 96 runs at once against app
// (one user each), session (four enqueued runs a session) and run budgets
// (four parallel branches a run), in tokens and in money, on bbolt and on
// two PostgreSQL replicas: with an output cap no budget's subject spends
// past it; without one, by at most one call.
func TestReservedBudgetKinds(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "apps.yaml"), reserveKindsConfig())
	for _, st := range []struct {
		name     string
		replicas int
		data     func(t *testing.T) string
	}{
		{"bbolt", 1, func(t *testing.T) string { return filepath.Join(t.TempDir(), "agentrunner.db") }},
		{"postgres-2-replicas", 2, func(t *testing.T) string { return pg.URL(t) }},
	} {
		for _, runs := range []int{32, 96} {
			for _, kind := range []string{"app", "session", "run"} {
				for _, unit := range []string{"tokens", "cost"} {
					for _, capped := range []string{"capped", "uncapped"} {
						app := fmt.Sprintf("%s_%s_%s", kind, unit, capped)
						t.Run(fmt.Sprintf("%s/%d/%s", st.name, runs, app), func(t *testing.T) {
							limit := reserveKindLimits[kind].tokens
							if unit == "cost" {
								limit = reserveKindLimits[kind].micros
							}
							spent, maxCall := kindRuns(t, st.data(t), path, st.replicas, runs, app, kind, unit)
							t.Logf("SPEND %s | %d runs | %s | most spent by one %s: %d of %d %s (largest call %d)", st.name, runs, app, kind, spent, limit, unit, maxCall)
							switch {
							case capped == "capped" && spent > limit:
								t.Fatalf("a %s spent %d past a budget of %d %s with an output cap", kind, spent, limit, unit)
							case spent > limit+maxCall:
								t.Fatalf("a %s spent %d: more than one call past the budget of %d %s", kind, spent, limit, unit)
							}
						})
					}
				}
			}
		}
	}
}

// kindRuns runs runs runs of app at once over replicas servers on data
// and returns the most one subject of its budget kind spent, in unit,
// and the largest call.
func kindRuns(t *testing.T, data, config string, replicas, runs int, app, kind, unit string) (spent, maxCall int64) {
	t.Helper()
	var rcs []servicev1.RunnerServiceClient
	var sc servicev1.SessionServiceClient
	for range replicas {
		_, rc, s, _ := stoppableRunsServer(t, data, config)
		rcs, sc = append(rcs, rc), s
	}
	where := func(i int) (user, session string) {
		switch kind {
		case "app":
			return fmt.Sprintf("u%d", i), "s"
		case "session":
			return "u", fmt.Sprintf("s%d", i%(runs/4))
		}
		return "u", fmt.Sprintf("s%d", i)
	}
	made := map[[2]string]bool{}
	for i := range runs {
		u, s := where(i)
		if !made[[2]string{u, s}] {
			made[[2]string{u, s}] = true
			sessionOf(t, sc, app, u, s)
		}
	}
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			u, s := where(i)
			_, err := lastRecord(t, rcs[i%replicas], &servicev1.RunRequest{AppName: app, UserId: u, SessionId: s, NewMessage: userText("hello, how are you"),
				MultitaskStrategy: agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE})
			if err != nil && status.Code(err) != codes.ResourceExhausted {
				t.Errorf("run %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	bySubject := map[string]int64{}
	for k := range made {
		got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: app, UserId: k[0], SessionId: k[1]})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range got.GetEvents() {
			n := int64(ev.GetUsageMetadata().GetTotalTokenCount())
			if unit == "cost" {
				n = ev.GetCost().GetMicros()
			}
			subject := map[string]string{"app": "app", "session": k[1], "run": ev.GetInvocationId()}[kind]
			bySubject[subject] += n
			maxCall = max(maxCall, n)
		}
	}
	for _, n := range bySubject {
		spent = max(spent, n)
	}
	return spent, maxCall
}

// branchesConfig: four parallel branches of one call each under a run
// budget: of 20 tokens without an output cap, of 100 with one of 32 (the
// offline model's calls take about 13: two of the four fit).
const branchesConfig = `
models:
  - {name: priced, provider: offline, price: {currency: USD, input: 2, output: 10}}
apps:
  - name: fan_uncapped
    budgets: {run: {tokens: 20}}
    root_agent:
      name: fan
      parallel: {}
      sub_agents:
        - {name: b0, llm: {model: priced}}
        - {name: b1, llm: {model: priced}}
        - {name: b2, llm: {model: priced}}
        - {name: b3, llm: {model: priced}}
  - name: fan_capped
    budgets: {run: {tokens: 100}}
    root_agent:
      name: fan
      parallel: {}
      sub_agents:
        - {name: b0, llm: {model: priced, max_output_tokens: 32}}
        - {name: b1, llm: {model: priced, max_output_tokens: 32}}
        - {name: b2, llm: {model: priced, max_output_tokens: 32}}
        - {name: b3, llm: {model: priced, max_output_tokens: 32}}
`

// TestParallelBranchesWithinRunBudget (issue 46): parallel branches
// share their run's budget: a 20-token run budget over four uncapped
// branches is passed by at most one call, a 100-token one over capped
// branches not at all, and the run that reached it ends FAILED. On
// 1dc16e9 the four branches spent 60 tokens of 20 and the run SUCCEEDED.
func TestParallelBranchesWithinRunBudget(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "apps.yaml"), branchesConfig)
	for _, st := range refusalStores {
		for _, app := range []string{"fan_uncapped", "fan_capped"} {
			t.Run(st.name+"/"+app, func(t *testing.T) {
				_, rc, sc, _ := stoppableRunsServer(t, st.data(t), path)
				sessionOf(t, sc, app, "u", "s")
				last, err := lastRecord(t, rc, &servicev1.RunRequest{AppName: app, UserId: "u", SessionId: "s", NewMessage: userText("hello, how are you")})
				if err != nil {
					t.Fatal(err)
				}
				got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: app, UserId: "u", SessionId: "s"})
				if err != nil {
					t.Fatal(err)
				}
				var spent, maxCall, calls int64
				for _, ev := range got.GetEvents() {
					if u := ev.GetUsageMetadata(); u != nil {
						n := int64(u.GetTotalTokenCount())
						spent, maxCall, calls = spent+n, max(maxCall, n), calls+1
					}
				}
				limit := map[string]int64{"fan_uncapped": 20, "fan_capped": 100}[app]
				t.Logf("%s: %d calls, %d tokens against %d (largest call %d); run %v", app, calls, spent, limit, maxCall, last.GetStatus())
				switch {
				case app == "fan_capped" && spent > limit:
					t.Fatalf("%d tokens spent past a run budget of %d with an output cap", spent, limit)
				case spent > limit+maxCall:
					t.Fatalf("%d tokens spent: more than one call past a run budget of %d", spent, limit)
				case calls < 4 && last.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_FAILED:
					t.Fatalf("the run that reached its budget ended %v; want FAILED", last.GetStatus())
				}
			})
		}
	}
}
