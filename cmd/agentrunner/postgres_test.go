package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

// TestReplicasOnPostgres: two serve replicas on one database at once.
// Runs of one session sent to both concurrently each run whole (their
// events contiguous in the session) or are refused ABORTED as a busy
// session.
func TestReplicasOnPostgres(t *testing.T) {
	url := pg.URL(t)
	_, rc1, sc, _ := stoppableRunsServer(t, url, "")
	_, rc2, _, _ := stoppableRunsServer(t, url, "")
	createSession(t, sc, "demo", "s")
	var ran, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			rc := []servicev1.RunnerServiceClient{rc1, rc2}[i%2]
			for j := range 4 {
				switch err := runOnce(t, rc, &servicev1.RunRequest{AppName: "demo", UserId: "u", SessionId: "s", NewMessage: userText(fmt.Sprintf("hello %d.%d", i, j))}); status.Code(err) {
				case codes.OK:
					ran.Add(1)
				case codes.Aborted:
					refused.Add(1)
				default:
					t.Errorf("run: %v", err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d runs ran, %d refused", ran.Load(), refused.Load())
	got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "demo", UserId: "u", SessionId: "s"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	events := got.GetEvents()
	for i, ev := range events {
		if i > 0 && ev.GetInvocationId() == events[i-1].GetInvocationId() {
			continue
		}
		if seen[ev.GetInvocationId()] {
			t.Fatalf("run %s's events are interleaved with another run's (event %d)", ev.GetInvocationId(), i)
		}
		seen[ev.GetInvocationId()] = true
	}
	if int64(len(seen)) != ran.Load() {
		t.Errorf("%d runs stored events; %d ran", len(seen), ran.Load())
	}
}

// runOnce runs req to its end and returns the stream's error.
func runOnce(t *testing.T, rc servicev1.RunnerServiceClient, req *servicev1.RunRequest) error {
	stream, err := rc.Run(t.Context(), req)
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}
