package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// traceRow is a bar of the console's trace, as its data attributes say.
type traceRow struct {
	Name, Kind, Agent, Branch, Facts string
	Start, Duration, TTFT            float64 // ms; start from the run's start
}

// traceRows reads the bars of the trace on the page.
func (p *tab) traceRows() []traceRow {
	p.t.Helper()
	out := p.wait("the trace's bars", `(() => { const rows = [...document.querySelectorAll("#trace-chart .trace-row")]; return rows.length ? JSON.stringify(rows.map((r) => ({
		Name: r.dataset.name, Kind: r.dataset.kind, Agent: r.dataset.agent, Branch: r.dataset.branch ?? "", Facts: r.querySelector(".trace-facts").textContent,
		Start: Number(r.dataset.startMs), Duration: Number(r.dataset.durationMs), TTFT: Number(r.dataset.ttftMs ?? 0) }))) : false })()`, 20*time.Second)
	var rows []traceRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		p.t.Fatal(err)
	}
	return rows
}

// timedSteps are the steps the stored events of a run time: model calls
// (and the remote agent's turn) on their events, tools on their function
// responses, as the bars they should be drawn as.
func timedSteps(t *testing.T, sc servicev1.SessionServiceClient, run *agentrunnerv1.Run) []traceRow {
	t.Helper()
	got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: run.GetAppName(), UserId: run.GetUserId(), SessionId: run.GetSessionId()})
	if err != nil {
		t.Fatal(err)
	}
	t0 := run.GetStartTime().AsTime()
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	var out []traceRow
	for _, ev := range got.GetEvents() {
		if tm := ev.GetTiming(); tm != nil {
			r := traceRow{Name: "chat offline", Kind: "model", Facts: fmt.Sprintf("%d tok", ev.GetUsageMetadata().GetTotalTokenCount()), Agent: ev.GetAuthor(), Branch: ev.GetBranch(),
				Start: ms(tm.GetStartTime().AsTime().Sub(t0)), Duration: ms(tm.GetDuration().AsDuration()), TTFT: ms(tm.GetTimeToFirstChunk().AsDuration())}
			switch ev.GetAuthor() {
			case "helpdesk": // the remote agent's turn
				r.Name, r.Kind, r.Duration, r.Facts = "invoke_agent helpdesk", "agent", -1, ""
			case "clerk": // priced
				r.Name, r.Facts = "chat offline:priced", r.Facts+" · "+money(ev.GetCost().GetMicros())+" USD"
			}
			out = append(out, r)
		}
		for _, p := range ev.GetContent().GetParts() {
			if tm := p.GetFunctionResponse().GetTiming(); tm != nil {
				out = append(out, traceRow{Name: "execute_tool " + p.GetFunctionResponse().GetName(), Kind: "tool", Agent: ev.GetAuthor(), Branch: ev.GetBranch(),
					Start: ms(tm.GetStartTime().AsTime().Sub(t0)), Duration: ms(tm.GetDuration().AsDuration())})
			}
		}
	}
	return out
}

// money prints micros as the console does (fmtCost).
func money(micros int64) string {
	s := fmt.Sprintf("%.6f", float64(micros)/1e6)
	for i := 0; i < 4 && strings.HasSuffix(s, "0"); i++ {
		s = s[:len(s)-1]
	}
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.002 }

// TestConsoleTrace: the run view of a run with a parallel step, an MCP
// tool, a transfer and a remote agent draws its trace: every step a bar
// named as its OpenTelemetry span, the parallel branches side by side,
// each timed bar where the stored timing puts it and as long, with its
// time to first chunk, tokens and cost; a click on a bar shows its events;
// a call waiting for input is drawn waiting; a run is followed live.
func TestConsoleTrace(t *testing.T) {
	browser(t)
	addr, console, run, _ := startTraced(t)
	want := timedSteps(t, servicev1.NewSessionServiceClient(dial(t, addr)), run)
	if len(want) != 6 { // clerk's 2 calls and tool, router's call and transfer, helpdesk
		t.Fatalf("the run stored %d timed steps, want 6: %+v", len(want), want)
	}
	p := openTab(t, console, "runs/"+run.GetRunId())
	p.wait("ten bars", `document.querySelectorAll("#trace-chart .trace-row").length === 10`, 20*time.Second)
	rows := p.traceRows()
	for _, w := range want {
		found := false
		for _, r := range rows {
			if r.Name == w.Name && r.Agent == w.Agent && r.Branch == w.Branch && near(r.Start, w.Start) && (w.Duration < 0 || near(r.Duration, w.Duration)) && near(r.TTFT, w.TTFT) && strings.Contains(r.Facts, w.Facts) {
				found = true
			}
		}
		if !found {
			t.Errorf("no bar for the stored step %+v among %+v", w, rows)
		}
	}
	// Each bar is drawn where its times put it on the run's axis.
	if bad := p.wait("the bars' geometry", `(() => { const c = document.querySelector("#trace-chart"); const total = Number(c.dataset.totalMs); const bad = [];
		for (const r of c.querySelectorAll(".trace-row")) { const tr = r.querySelector(".trace-track").getBoundingClientRect(), b = r.querySelector(".trace-bar").getBoundingClientRect();
			const x = tr.left + tr.width * Number(r.dataset.startMs) / total, w = Math.max(2, tr.width * Number(r.dataset.durationMs) / total);
			if (Math.abs(b.left - x) > 1.5 || Math.abs(b.width - w) > 1.5) bad.push(r.dataset.name + " at " + b.left + "+" + b.width + ", want " + x + "+" + w); }
		return JSON.stringify(bad) })()`, 10*time.Second); bad != "[]" {
		t.Errorf("bars misdrawn: %s", bad)
	}
	branches := map[string]bool{}
	for _, r := range rows {
		if r.Kind == "agent" && r.Branch != "" {
			branches[r.Branch] = true
		}
	}
	if !branches["fanout.clerk"] || !branches["fanout.router"] {
		t.Errorf("agent bars in branches %v, want fanout.clerk and fanout.router side by side", branches)
	}
	if !p.has(`document.querySelector('.trace-row[data-name="invoke_agent helpdesk"] .tag')?.textContent === "remote"`) {
		t.Error("the remote agent's bar does not say remote")
	}
	// A click on the transfer's bar shows it and links its events.
	p.click(`.trace-row[data-name="execute_tool transfer_to_agent"]`)
	if got := p.text("#trace-detail"); !containsAll(got, "execute_tool transfer_to_agent", "transferred to", "helpdesk") {
		t.Errorf("the transfer's detail says %q", got)
	}
	seq := p.wait("an event link", `document.querySelector("#trace-detail a.trace-event:last-child")?.getAttribute("href")`, 10*time.Second)
	p.click("#trace-detail a.trace-event:last-child")
	p.wait("the linked event flashed", fmt.Sprintf(`document.querySelector(%q)?.classList.contains("flash")`, seq), 10*time.Second)
	p.shot("trace")

	// A run waiting for input: its call's bar says so.
	waiting := waitOnLookup(t, addr)
	wp := openTab(t, console, "runs/"+waiting.GetRunId())
	wp.wait("the waiting call's bar", `document.querySelector('#trace-chart .trace-row.waiting.open[data-name="execute_tool lookup"]')?.textContent.includes("waiting for input")`, 20*time.Second)

	// A run followed live: its trace is open while it runs, the graph marks
	// the agent streaming its answer, and the trace shows its model call
	// once stored, without a reload.
	rc, sc := servicev1.NewRunnerServiceClient(dial(t, addr)), servicev1.NewSessionServiceClient(dial(t, addr))
	sess, err := sc.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "slowly", UserId: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	started, err := rc.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "slowly", UserId: "u1", SessionId: sess.GetSession().GetSessionId(), NewMessage: userText("take your time"),
		RunConfig: &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}})
	if err != nil {
		t.Fatal(err)
	}
	live := openTab(t, console, "runs/"+started.GetRun().GetRunId())
	live.wait("the run's bar open", `document.querySelector('#trace-chart .trace-row.run.open')`, 10*time.Second)
	if live.has(`document.querySelector('#trace-chart .trace-row[data-kind="model"]')`) {
		t.Fatal("a model call drawn before it ended") // the offline model takes 1.5s to its first chunk
	}
	live.wait("the streaming agent running in the graph", `document.querySelector('#agent-graph .node.running.visited[data-agent="slowpoke"]')`, 20*time.Second)
	live.wait("the model call's bar, the run ended", `document.querySelector('#trace-chart .trace-row[data-kind="model"]:not(.open)') && !document.querySelector('#trace-chart .trace-row.open')`, 20*time.Second)
	live.wait("the agent visited, no longer running", `document.querySelector('#agent-graph .node.visited[data-agent="slowpoke"]:not(.running)')`, 10*time.Second)
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// TestConsoleAgentGraph: the run view draws the app's agent tree as a
// graph (kinds, models, tools, the transfers an agent may make), and
// highlights the path the run took: the agents it visited and the edges
// it went along, not the agent it never asked.
func TestConsoleAgentGraph(t *testing.T) {
	browser(t)
	_, console, run, _ := startTraced(t)
	p := openTab(t, console, "runs/"+run.GetRunId())
	p.wait("the graph's nodes", `document.querySelectorAll("#agent-graph svg .node").length === 5`, 20*time.Second)
	p.wait("the run's path highlighted", `document.querySelectorAll("#agent-graph .node.visited").length > 0`, 20*time.Second)
	visited := p.wait("visited agents", `JSON.stringify([...document.querySelectorAll("#agent-graph .node.visited")].map((n) => n.dataset.agent).sort())`, 5*time.Second)
	if visited != `["clerk","fanout","helpdesk","router"]` {
		t.Errorf("visited agents %s, want clerk, fanout, helpdesk and router", visited)
	}
	taken := p.wait("taken edges", `JSON.stringify([...document.querySelectorAll("#agent-graph .edge.taken")].map((e) => e.dataset.from + ">" + e.dataset.to).sort())`, 5*time.Second)
	if taken != `["fanout>clerk","fanout>router","router>helpdesk"]` {
		t.Errorf("edges taken %s, want fanout>clerk, fanout>router and router>helpdesk", taken)
	}
	for what, expr := range map[string]string{
		"the parallel agent's kind":          `document.querySelector('#agent-graph .node[data-agent="fanout"]').dataset.kind === "parallel"`,
		"the remote agent's kind":            `document.querySelector('#agent-graph .node[data-agent="helpdesk"]').dataset.kind === "remote"`,
		"the clerk's model and tool":         `document.querySelector('#agent-graph .node[data-agent="clerk"]').textContent.includes("offline") && document.querySelector('#agent-graph .node[data-agent="clerk"]').textContent.includes("order_status")`,
		"archivist's transfer to its parent": `document.querySelector('#agent-graph .edge.transfer[data-from="archivist"][data-to="router"]')`,
	} {
		if !p.has(expr) {
			t.Errorf("the graph lacks %s (%s)", what, expr)
		}
	}
	p.shot("agent-graph")

	// The app's page draws the same graph, with no run's path.
	app := openTab(t, console, "apps/traced")
	app.wait("the app's graph", `document.querySelectorAll(".graph-box svg .node").length === 5 && !document.querySelector(".graph-box .node.visited")`, 20*time.Second)
}
