package main

import (
	"path/filepath"
	"regexp"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

// TestExampleCostsApps serves examples/costs/apps.yaml as docs/costs.md
// says to and runs its app: the clerk's call is priced, and a transfer
// to the archive adds an unpriced call, which makes the run's cost a
// lower bound.
func TestExampleCostsApps(t *testing.T) {
	addr, rc, sc := runsServer(t, filepath.Join(t.TempDir(), "a.db"), filepath.Join("..", "..", "examples", "costs", "apps.yaml"))
	createSession(t, sc, "shop", "s")
	run := runToEnd(t, rc, &servicev1.RunRequest{AppName: "shop", UserId: "u", SessionId: "s", NewMessage: userText("hello")})
	if c := run.GetCost(); c.GetCurrency() != "USD" || c.GetMicros() <= 0 || c.GetUnpricedCalls() != 0 {
		t.Fatalf("a run of the priced clerk cost %v; want USD micro-units and no unpriced call", c)
	}
	run = runToEnd(t, rc, &servicev1.RunRequest{AppName: "shop", UserId: "u", SessionId: "s", NewMessage: userText("please transfer to archive")})
	if c := run.GetCost(); c.GetCurrency() != "USD" || c.GetUnpricedCalls() != 1 {
		t.Fatalf("a run through the unpriced archive cost %v; want one unpriced call", c)
	}
	if out := mustRunsCLI(t, addr, "get", run.GetRunId()); !regexpMatch(`cost:\s+≥ \d+\.\d+ USD \(1 call unpriced\)\n`, out) {
		t.Errorf("runs get of the mixed run:\n%s", out)
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
