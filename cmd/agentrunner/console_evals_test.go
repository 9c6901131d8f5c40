package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConsoleEvals: the Evals view lists a user's evaluations with their
// pass counts, an evaluation shows its cases and, for a failed one, the
// turn whose tool calls differ, expected against actual; the turn's
// session is one click away.
func TestConsoleEvals(t *testing.T) {
	browser(t) // skip before starting a server when there is no browser
	addr, console, _, _ := startConsole(t)
	data, err := os.ReadFile(demoEvalSet)
	if err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(t.TempDir(), "changed.evalset.json")
	if err := os.WriteFile(changed, []byte(strings.Replace(string(data), `"agent_name": "billing"}}]}`, `"agent_name": "tech"}}]}`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := cli(t, "", "eval", demoEvalSet, "--addr", addr, "--user", "ci", "--label", "good"); code != 0 {
		t.Fatalf("eval: exit %d\n%s", code, out)
	}
	if out, code := cli(t, "", "eval", changed, "--addr", addr, "--user", "ci", "--label", "bad"); code != 1 {
		t.Fatalf("eval of the changed set: exit %d, want 1\n%s", code, out)
	}
	p := openTab(t, console, "evals?app=support&user=ci")
	p.wait("two evaluations", `document.querySelectorAll("#evals-list tr[data-eval]").length === 2`, 20*time.Second)
	if !p.has(`document.querySelector('#evals-list tr[data-passed="0"]').textContent.includes("2/3")`) ||
		!p.has(`document.querySelector('#evals-list tr[data-passed="1"]').textContent.includes("3/3")`) {
		t.Fatalf("evaluations list:\n%s", p.text("#evals-list"))
	}
	p.click(`#evals-list tr[data-passed="0"] a`)
	p.wait("the evaluation", `document.querySelector("#eval-summary")?.textContent.includes("2 of 3 cases passed")`, 20*time.Second)
	if !p.has(`document.querySelector('#eval-cases tr[data-case="billing_question"]').dataset.passed === "0"`) {
		t.Errorf("billing_question is not marked failed:\n%s", p.text("#eval-cases"))
	}
	diff := p.text(`.eval-turns tr[data-differs="1"]`)
	if !strings.Contains(diff, `transfer_to_agent({"agent_name":"tech"})`) || !strings.Contains(diff, `transfer_to_agent({"agent_name":"billing"})`) {
		t.Errorf("the differing turn shows %q", diff)
	}
	p.shot("evals")
	p.click(`.eval-repeat a[href*="/sessions/eval-"]`)
	p.wait("the case's session", `location.pathname.includes("/users/ci/sessions/eval-")`, 20*time.Second)
}
