package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// TestConsoleRunsBoard: the runs board lists ended runs as well as active
// ones, filters them by status, user and app, orders them, and shows the
// tokens a run still going on has used so far.
func TestConsoleRunsBoard(t *testing.T) {
	browser(t)
	addr, console, traced, _ := startTraced(t)
	rc, sc := servicev1.NewRunnerServiceClient(dial(t, addr)), servicev1.NewSessionServiceClient(dial(t, addr))
	run := func(user, msg string) *agentrunnerv1.Run {
		t.Helper()
		sess, err := sc.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "waiter", UserId: user})
		if err != nil {
			t.Fatal(err)
		}
		stream, err := rc.Run(t.Context(), &servicev1.RunRequest{AppName: "waiter", UserId: user, SessionId: sess.GetSession().GetSessionId(), NewMessage: userText(msg)})
		if err != nil {
			t.Fatal(err)
		}
		var rec *agentrunnerv1.Run
		for {
			resp, err := stream.Recv()
			if err != nil {
				return rec
			}
			if r := resp.GetRun(); r != nil {
				rec = r
			}
		}
	}
	done1 := run("u1", "hello")
	waiting := run("u1", "call lookup {}")
	done2 := run("u2", "hello there, a longer message")
	cancelled := run("u2", "call lookup {}")
	if _, err := rc.CancelRun(t.Context(), &servicev1.CancelRunRequest{RunId: cancelled.GetRunId()}); err != nil {
		t.Fatal(err)
	}
	if waiting.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED || waiting.GetUsage().GetTotalTokenCount() == 0 {
		t.Fatalf("the waiting run: %v with usage %v; want INPUT_REQUIRED with its model call's tokens", waiting.GetStatus(), waiting.GetUsage())
	}
	p := openTab(t, console, "runs?app=waiter&all=1")
	rowsAre := func(what string, ids ...string) {
		t.Helper()
		want := `"` + strings.Join(ids, `","`) + `"`
		p.wait(what, fmt.Sprintf(`JSON.stringify([...document.querySelectorAll("#runs-rows tr[data-run]")].map((r) => r.dataset.run)) === '[%s]'`, want), 20*time.Second)
	}
	// Active runs by default, with the tokens used so far.
	rowsAre("the active run", waiting.GetRunId())
	if got := p.text(fmt.Sprintf(`#runs-rows tr[data-run="%s"] td.tokens`, waiting.GetRunId())); !strings.Contains(got, fmt.Sprintf("%d tok", waiting.GetUsage().GetTotalTokenCount())) || !strings.Contains(got, "so far") {
		t.Errorf("the waiting run's tokens say %q, want its %d tokens so far", got, waiting.GetUsage().GetTotalTokenCount())
	}
	// Ended runs, newest first; then one status; then oldest first.
	p.fill("#runs-status", "ended")
	rowsAre("the ended runs", cancelled.GetRunId(), done2.GetRunId(), done1.GetRunId())
	p.fill("#runs-status", "cancelled")
	rowsAre("the cancelled run", cancelled.GetRunId())
	p.fill("#runs-status", "all")
	p.fill("#runs-sort", "oldest")
	rowsAre("every run, oldest first", done1.GetRunId(), waiting.GetRunId(), done2.GetRunId(), cancelled.GetRunId())
	p.fill("#runs-sort", "tokens")
	p.wait("most tokens first", `(() => { const t = [...document.querySelectorAll("#runs-rows tr[data-run]")].map((r) => Number(r.dataset.tokens)); return t.length === 4 && t.every((x, i) => i === 0 || t[i-1] >= x) && t[0] > t[3] })()`, 20*time.Second)
	// One user's runs.
	p.click("#runs-all")
	p.fill("#runs-user", "u2")
	p.fill("#runs-sort", "newest")
	rowsAre("u2's runs", cancelled.GetRunId(), done2.GetRunId())
	p.shot("runs-board-ended")
	// Another app's.
	p.fill("#runs-app", "traced")
	p.fill("#runs-user", "u1")
	rowsAre("the traced app's run", traced.GetRunId())
	if !p.has(`location.search.includes("status=all") && location.search.includes("app=traced")`) {
		t.Errorf("the board's filters are not in its URL: %s", p.wait("url", "location.search", time.Second))
	}
}
