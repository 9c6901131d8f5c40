package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store/pgstore/pgtest"
)

// pg is this test binary's PostgreSQL cluster, started by the first test
// that needs one and stopped by TestMain.
var pg pgtest.Shared

// TestServeOnPostgres: `migrate` prepares an empty database, serve on its
// URL completes runs through the gRPC API, and a second server on the
// same database finds the sessions, events and run records the first
// stored.
func TestServeOnPostgres(t *testing.T) {
	url := pg.URL(t)
	var out, errOut strings.Builder
	if err := run(t.Context(), []string{"migrate", "--data", url}, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("migrate: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), ": applied ") || strings.Contains(out.String(), "applied 0 ") {
		t.Fatalf("migrate printed %q", out.String())
	}

	_, rc, sc, stop := stoppableRunsServer(t, url, "")
	createSession(t, sc, "demo", "s")
	first := runToEnd(t, rc, &servicev1.RunRequest{AppName: "demo", UserId: "u", SessionId: "s", NewMessage: userText("hello there"), RequestId: "req-1"})
	second := runToEnd(t, rc, &servicev1.RunRequest{AppName: "demo", UserId: "u", SessionId: "s", NewMessage: userText("once more, please")})
	for _, r := range []*agentrunnerv1.Run{first, second} {
		if r.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || r.GetLastSequence() < r.GetFirstSequence() || r.GetFirstSequence() == 0 {
			t.Fatalf("run ended as %v", r)
		}
	}
	if second.GetFirstSequence() <= first.GetLastSequence() {
		t.Fatalf("runs interleave: first #%d-#%d, second #%d-#%d", first.GetFirstSequence(), first.GetLastSequence(), second.GetFirstSequence(), second.GetLastSequence())
	}
	stop()

	// Another server on the same database (a restart, or another replica).
	_, rc, sc, _ = stoppableRunsServer(t, url, "")
	got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "demo", UserId: "u", SessionId: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if n := uint64(len(got.GetEvents())); n != second.GetLastSequence() || got.GetSession().GetLastSequence() != n {
		t.Fatalf("second server sees %d events, last_sequence %d; want %d", n, got.GetSession().GetLastSequence(), second.GetLastSequence())
	}
	for _, want := range []*agentrunnerv1.Run{first, second} {
		rec, err := rc.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: want.GetRunId()})
		if err != nil || rec.GetRun().GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || rec.GetRun().GetLastSequence() != want.GetLastSequence() {
			t.Fatalf("GetRun(%s) on the second server = %v, %v", want.GetRunId(), rec, err)
		}
	}

	out.Reset()
	if err := run(t.Context(), []string{"migrate", "--data", url}, strings.NewReader(""), &out, &errOut); err != nil || !strings.Contains(out.String(), "applied 0 migrations") {
		t.Fatalf("second migrate: %q, %v", out.String(), err)
	}
}

// TestMemoryOnPostgres: on a postgres:// --data, a session added to
// memory through gRPC is found by SearchMemory from another session of
// the user, with the events of a run made after the add, and by nobody
// else.
func TestMemoryOnPostgres(t *testing.T) {
	addr, rc, sc, _ := stoppableRunsServer(t, pg.URL(t), "")
	mc := servicev1.NewMemoryServiceClient(dial(t, addr))
	createSession(t, sc, "demo", "past")
	runToEnd(t, rc, &servicev1.RunRequest{AppName: "demo", UserId: "u", SessionId: "past", NewMessage: userText("my cat is called Tiberius")})
	if _, err := mc.AddSessionToMemory(t.Context(), &servicev1.AddSessionToMemoryRequest{AppName: "demo", UserId: "u", SessionId: "past"}); err != nil {
		t.Fatalf("AddSessionToMemory: %v", err)
	}
	runToEnd(t, rc, &servicev1.RunRequest{AppName: "demo", UserId: "u", SessionId: "past", NewMessage: userText("and my dog Zebedee")})
	createSession(t, sc, "demo", "now")

	search := func(user, query string) []*servicev1.Memory {
		t.Helper()
		resp, err := mc.SearchMemory(t.Context(), &servicev1.SearchMemoryRequest{AppName: "demo", UserId: user, Query: query})
		if err != nil {
			t.Fatalf("SearchMemory(%s, %q): %v", user, query, err)
		}
		return resp.GetMemories()
	}
	for q, want := range map[string]string{"What is my cat called? Tiberius?": "Tiberius", "zebedee": "Zebedee"} {
		got := search("u", q)
		if len(got) == 0 || got[0].GetSessionId() != "past" || !strings.Contains(got[0].GetContent().GetParts()[0].GetText(), want) {
			t.Fatalf("search %q found %v", q, got)
		}
	}
	if got := search("someone-else", "tiberius"); len(got) != 0 {
		t.Fatalf("another user found %v", got)
	}
}

// TestMigrateBoltFile: migrate on a bbolt file creates or upgrades it and
// says its schema version; an argument is a usage error (exit 2).
func TestMigrateBoltFile(t *testing.T) {
	data := filepath.Join(t.TempDir(), "a.db")
	var out, errOut strings.Builder
	if err := run(t.Context(), []string{"migrate", "--data", data}, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("migrate: %v\n%s", err, errOut.String())
	}
	if !strings.HasPrefix(out.String(), data+": schema version ") {
		t.Fatalf("migrate printed %q", out.String())
	}
	if err := run(t.Context(), []string{"migrate", "extra"}, strings.NewReader(""), &out, &errOut); exitCode(err, io.Discard) != 2 {
		t.Fatalf("migrate with an argument: %v, want a usage error", err)
	}
}
