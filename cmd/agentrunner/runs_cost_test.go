package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/spendfmt"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
)

// TestRunsShowCost: `runs get`, `list` and `attach` show a run's cost
// beside its tokens: tokens × prices on a priced model (spendApps'
// shop), "unknown" on an unpriced one (lab), and nothing about cost for
// a run without model calls (the demo app).
func TestRunsShowCost(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(config, []byte(spendApps), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, rc, sc := runsServer(t, filepath.Join(dir, "a.db"), config)
	runs := map[string]*agentrunnerv1.Run{}
	for _, app := range []string{"shop", "lab"} {
		createSession(t, sc, app, "s")
		runs[app] = runToEnd(t, rc, &servicev1.RunRequest{AppName: app, UserId: "u", SessionId: "s", NewMessage: userText("how much is it")})
	}
	shop := storedSpend(t, sc, "shop")
	tokens := spendfmt.Count(shop.prompt + shop.candidates)
	cost := agent.FormatMicros(2*shop.prompt+10*shop.candidates) + " USD"

	out := mustRunsCLI(t, addr, "get", runs["shop"].GetRunId())
	for _, want := range []string{"tokens:         " + spendfmt.Count(shop.prompt) + " in, " + spendfmt.Count(shop.candidates) + " out, " + tokens + " total\n", "cost:           " + cost + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs get of the priced run lacks %q:\n%s", want, out)
		}
	}
	if out := mustRunsCLI(t, addr, "get", runs["lab"].GetRunId()); !strings.Contains(out, "cost:           unknown\n") {
		t.Errorf("runs get of the unpriced run does not say its cost is unknown:\n%s", out)
	}

	out = mustRunsCLI(t, addr, "list", "--app", "shop", "--user", "u", "--session", "s")
	if !strings.Contains(out, " TOKENS  COST ") {
		t.Errorf("runs list has no TOKENS and COST columns:\n%s", out)
	}
	if row := rowOf(t, out, runs["shop"].GetRunId()); !strings.Contains(row, " "+tokens+"  "+cost+" ") {
		t.Errorf("row of the priced run %q lacks %s tokens and %s", row, tokens, cost)
	}
	out = mustRunsCLI(t, addr, "list", "--app", "lab", "--user", "u", "--session", "s")
	if row := rowOf(t, out, runs["lab"].GetRunId()); !strings.Contains(row, "  unknown ") {
		t.Errorf("row of the unpriced run %q does not say unknown", row)
	}

	out = mustRunsCLI(t, addr, "attach", runs["shop"].GetRunId())
	if want := "\n  tokens " + tokens + " · cost " + cost + "\n"; !strings.Contains(out, want) {
		t.Errorf("runs attach of the priced run lacks %q:\n%s", want, out)
	}

	// The demo app (of the default apps) calls no model: no tokens, no
	// cost, anywhere.
	addr, rc, sc = runsServer(t, filepath.Join(dir, "b.db"), "")
	createSession(t, sc, "demo", "s")
	demo := runToEnd(t, rc, &servicev1.RunRequest{AppName: "demo", UserId: "u", SessionId: "s", NewMessage: userText("hello")})
	for _, args := range [][]string{{"get", demo.GetRunId()}, {"attach", demo.GetRunId()}} {
		if out := mustRunsCLI(t, addr, args...); strings.Contains(out, "cost") || strings.Contains(out, "tokens") {
			t.Errorf("runs %s of a run without model calls speaks of tokens or cost:\n%s", args[0], out)
		}
	}
}
