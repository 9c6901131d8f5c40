package main

import (
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// The console's "Fork from here", "Rewind to here" and "Edit and re-run"
// (server/console/src/fork.ts), in Chromium against the real server, on
// the orders app (the offline model, at once).

// twoRuns makes session orders/u/id of two runs: "a red bike" (events
// #1-#2, cart "red bike") and "make it blue" (#3-#4, cart "blue bike").
func twoRuns(t *testing.T, rc servicev1.RunnerServiceClient, sc servicev1.SessionServiceClient, id string) {
	t.Helper()
	createSession(t, sc, "orders", id)
	for _, turn := range [][2]string{{"a red bike", "red bike"}, {"make it blue", "blue bike"}} {
		delta, _ := structpb.NewStruct(map[string]any{"cart": turn[1]})
		run := runToEnd(t, rc, &servicev1.RunRequest{AppName: "orders", UserId: "u", SessionId: id, StateDelta: delta,
			NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: turn[0]}}}}})
		if run.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
			t.Fatalf("run %q ended %v", turn[0], run.GetStatus())
		}
	}
}

// forkOf returns the session of user u of the orders app forked from
// source, failing unless there is exactly one.
func forkOf(t *testing.T, sc servicev1.SessionServiceClient, source string) *servicev1.GetSessionResponse {
	t.Helper()
	list, err := sc.ListSessions(t.Context(), &servicev1.ListSessionsRequest{AppName: "orders", UserId: "u"})
	if err != nil {
		t.Fatal(err)
	}
	var found []*agentrunnerv1.Session
	for _, s := range list.GetSessions() {
		if s.GetForkedFrom().GetSessionId() == source {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("forks of %s: %v, want one", source, found)
	}
	got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "orders", UserId: "u", SessionId: found[0].GetSessionId()})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// onSessionOtherThan waits until the page shows a session other than id.
func (p *tab) onSessionOtherThan(id string) {
	p.t.Helper()
	p.wait("another session's page", `(() => { const e = document.querySelector("#session-id"); return e && e.textContent !== `+jsString(id)+` && location.pathname.includes("/sessions/") && !location.pathname.endsWith("/sessions/`+id+`") })()`, 20*time.Second)
}

func jsString(s string) string { return `"` + s + `"` }

func TestConsoleForkFromHere(t *testing.T) {
	console, rc, sc, _ := consoleServer(t)
	twoRuns(t, rc, sc, "fx")
	p := openTab(t, console, sessionPath("orders", "u", "fx"))
	p.chatReady()
	p.click("#ev-2 .fork-here")
	p.onSessionOtherThan("fx")
	p.chatReady()
	p.wait("the fork's two events", `document.querySelector("#ev-2") && !document.querySelector("#ev-3")`, 20*time.Second)
	if got := p.text("#forked-from"); got != " · forked from fx at #2" {
		t.Errorf("the fork's header says %q, want its source", got)
	}
	p.shot("fork-from-here")
	got := forkOf(t, sc, "fx")
	if s := got.GetSession(); s.GetForkedFrom().GetSequence() != 2 || len(got.GetEvents()) != 2 || s.GetState().GetFields()["cart"].GetStringValue() != "red bike" {
		t.Fatalf("fork made in the page = %v with %d events; want events #1-#2 of fx, cart red bike", s, len(got.GetEvents()))
	}
}

func TestConsoleRewindToHere(t *testing.T) {
	console, rc, sc, _ := consoleServer(t)
	twoRuns(t, rc, sc, "rx")
	p := openTab(t, console, sessionPath("orders", "u", "rx"))
	p.chatReady()
	p.click("#ev-3 .rewind-here")
	p.wait("the rewind event in the timeline", `document.querySelector("#ev-5 .rewind-note")`, 20*time.Second)
	if !p.has(`document.querySelector("#ev-3") && document.querySelector("#ev-4")`) {
		t.Error("the rewound events are gone from the timeline; they must stay")
	}
	p.shot("rewind-to-here")
	got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "orders", UserId: "u", SessionId: "rx"})
	if err != nil {
		t.Fatal(err)
	}
	last := got.GetEvents()[len(got.GetEvents())-1]
	if got.GetSession().GetState().GetFields()["cart"].GetStringValue() != "red bike" || last.GetActions().GetRewindBeforeInvocationId() != got.GetEvents()[2].GetInvocationId() {
		t.Fatalf("after the page's rewind: state %v, last event %v; want cart red bike and a rewind before the second run", got.GetSession().GetState(), last)
	}
}

func TestConsoleEditAndRerun(t *testing.T) {
	console, rc, sc, _ := consoleServer(t)
	twoRuns(t, rc, sc, "ex")
	p := openTab(t, console, sessionPath("orders", "u", "ex"))
	p.chatReady()
	if p.has(`document.querySelector("#ev-4 .edit-rerun")`) {
		t.Error("an agent's answer offers Edit and re-run; only user messages do")
	}
	p.click("#ev-3 .edit-rerun")
	if got := p.wait("the editor with the message", `document.querySelector("#ev-3 .edit-message")?.value`, 20*time.Second); got != "make it blue" {
		t.Errorf("editor holds %q, want the message", got)
	}
	p.fill("#ev-3 .edit-message", "make it green")
	p.click("#ev-3 .run-edited")
	p.onSessionOtherThan("ex")
	p.wait("the edited message's answer in the fork", `[...document.querySelectorAll("#timeline .text")].some(e => e.textContent.includes("you said: make it green"))`, 30*time.Second)
	p.shot("edit-and-rerun")
	got := forkOf(t, sc, "ex")
	evs := got.GetEvents()
	if got.GetSession().GetForkedFrom().GetSequence() != 2 || len(evs) < 4 || evs[2].GetContent().GetParts()[0].GetText() != "make it green" {
		t.Fatalf("fork made by Edit and re-run = %v with events %v; want #1-#2 of ex, then the edited message", got.GetSession(), evs)
	}
	if src, _ := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "orders", UserId: "u", SessionId: "ex"}); src.GetSession().GetLastSequence() != 4 {
		t.Errorf("the source got events: last sequence %d, want 4", src.GetSession().GetLastSequence())
	}
}
