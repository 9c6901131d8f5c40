package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

// TestConsoleBudgets: the usage page shows what a user spent today
// against the app's daily budget, and says when it is reached; the
// figures are those of the stored run.
func TestConsoleBudgets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "apps.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, costsConfig, 1), 0o600); err != nil {
		t.Fatal(err)
	}
	console, rc, sc, _ := consoleServer(t, "--config", path)
	sessionOf(t, sc, "capped", "u", "s")
	run := runToEnd(t, rc, &servicev1.RunRequest{AppName: "capped", UserId: "u", SessionId: "s", NewMessage: userText("hello there")})
	tokens := run.GetUsage().GetTotalTokenCount()

	p := openTab(t, console, "usage?app=capped&user=u")
	got := p.wait("the user's budget row", `(() => { const r = document.querySelector('#usage-budgets tr[data-budget^="user u"]'); return r ? r.dataset.reached + " " + r.innerText : false })()`, 20*time.Second)
	want := fmt.Sprintf("%d of 1", tokens)
	if !strings.HasPrefix(got, "1 ") || !strings.Contains(got, want) || !strings.Contains(got, "reached") {
		t.Fatalf("budget row %q: want it reached, with %q", got, want)
	}
	p.shot("budgets")
}
