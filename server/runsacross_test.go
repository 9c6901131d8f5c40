package server

import (
	"log/slog"
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store/pgstore"
	"google.golang.org/grpc/codes"
)

// boardAuth: bob and carol may use every app as themselves; root is an
// admin.
var boardAuth = `principals:
  - {name: bob, token_sha256: ` + sha("bob-token") + `, apps: ["*"], users: [self]}
  - {name: carol, token_sha256: ` + sha("carol-token") + `, apps: ["*"], users: [self]}
  - {name: root, token_sha256: ` + sha("root-token") + `, admin: true}
`

// newPGEnv is newEnv on a PostgreSQL store of a database of its own.
func newPGEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	st, err := pgstore.Open(t.Context(), pg.URL(t), pgstore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cfg := Config{Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	return startEnv(t, st, cfg, logs)
}

// activeStatuses is what the console's runs board asks for.
var activeStatuses = []agentrunnerv1.RunStatus{
	agentrunnerv1.RunStatus_RUN_STATUS_PENDING, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING, agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED,
}

// boardRun starts a run of the gate app as user in session and, when
// finish, lets it end and waits for its end; else it is left RUNNING at
// its gate. It returns the run's id.
func boardRun(t *testing.T, e *env, g *gateApp, user, session, msg string, finish bool) string {
	t.Helper()
	ctx := as(t.Context(), "root")
	if finish {
		g.release(msg)
	}
	resp, err := e.runner.StartRun(ctx, &servicev1.StartRunRequest{AppName: "gate", UserId: user, SessionId: session, NewMessage: text(msg)})
	if err != nil {
		t.Fatalf("StartRun(%s): %v", msg, err)
	}
	g.waitEntered(t, msg)
	id := resp.GetRun().GetRunId()
	if finish {
		stream, err := e.runner.AttachRun(ctx, &servicev1.AttachRunRequest{RunId: id})
		if err != nil {
			t.Fatal(err)
		}
		if res := toResult(collectRun(t, stream)); res.final(t).GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
			t.Fatalf("run %s ended %v", msg, res.final(t).GetStatus())
		}
	}
	return id
}

// listRuns pages through ListRuns as principal with pages of size and
// returns the runs' ids.
func listRuns(t *testing.T, e *env, principal string, req *servicev1.ListRunsRequest, size int32) []string {
	t.Helper()
	var ids []string
	req.PageSize, req.PageToken = size, ""
	for n := 0; ; n++ {
		if n > 20 {
			t.Fatal("ListRuns does not terminate")
		}
		resp, err := e.runner.ListRuns(as(t.Context(), principal), req)
		if err != nil {
			t.Fatalf("ListRuns(%v) as %s: %v", req, principal, err)
		}
		for _, r := range resp.GetRuns() {
			ids = append(ids, r.GetRunId())
		}
		if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" {
			return ids
		}
	}
}

// TestListRunsAcrossSessions, on both stores: a user's runs in several
// sessions are listed together, newest first, paged across sessions,
// filtered by status; a principal of one user sees no other user's runs
// and cannot list every user's; an admin can; bad filters and tokens are
// INVALID_ARGUMENT.
func TestListRunsAcrossSessions(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(t *testing.T, opts ...envOption) *env
	}{{"bbolt", newEnv}, {"postgres", newPGEnv}} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate()
			e := tc.env(t, withRunnerApps(t, g.app), withAuth(t, boardAuth))
			root := as(t.Context(), "root")
			for _, k := range [][2]string{{"bob", "s1"}, {"bob", "s2"}, {"bob", "s3"}, {"carol", "s1"}} {
				if _, err := e.sessions.CreateSession(root, &servicev1.CreateSessionRequest{AppName: "gate", UserId: k[0], SessionId: k[1]}); err != nil {
					t.Fatal(err)
				}
			}
			// Oldest first: a, b end; c, d stay running; carol's e ends, f runs.
			a := boardRun(t, e, g, "bob", "s1", "a", true)
			b := boardRun(t, e, g, "bob", "s2", "b", true)
			c := boardRun(t, e, g, "bob", "s3", "c", false)
			ce := boardRun(t, e, g, "carol", "s1", "e", true)
			d := boardRun(t, e, g, "bob", "s1", "d", false)
			cf := boardRun(t, e, g, "carol", "s1", "f", false)
			want := func(got []string, want ...string) {
				t.Helper()
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Fatalf("listed %q, want %q", got, want)
				}
			}
			bobs := &servicev1.ListRunsRequest{AppName: "gate", UserId: "bob"}
			for _, size := range []int32{1, 2, 0} {
				want(listRuns(t, e, "bob", bobs, size), d, c, b, a)
			}
			bobActive := &servicev1.ListRunsRequest{AppName: "gate", UserId: "bob", Statuses: activeStatuses}
			want(listRuns(t, e, "bob", bobActive, 1), d, c)
			want(listRuns(t, e, "bob", &servicev1.ListRunsRequest{AppName: "gate", UserId: "bob", Statuses: []agentrunnerv1.RunStatus{agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED}}, 1), b, a)
			want(listRuns(t, e, "bob", &servicev1.ListRunsRequest{AppName: "gate", UserId: "bob", SessionId: "s1", Statuses: activeStatuses}, 0), d)
			want(listRuns(t, e, "carol", &servicev1.ListRunsRequest{AppName: "gate", UserId: "carol"}, 0), cf, ce)
			want(listRuns(t, e, "root", &servicev1.ListRunsRequest{AppName: "gate", Statuses: activeStatuses}, 2), cf, d, c)
			want(listRuns(t, e, "root", &servicev1.ListRunsRequest{AppName: "gate"}, 4), cf, d, ce, c, b, a)

			// One user's principal: not another's runs, not every user's.
			_, err := e.runner.ListRuns(as(t.Context(), "bob"), &servicev1.ListRunsRequest{AppName: "gate", UserId: "carol"})
			wantCode(t, err, codes.PermissionDenied, "")
			_, err = e.runner.ListRuns(as(t.Context(), "bob"), &servicev1.ListRunsRequest{AppName: "gate", Statuses: activeStatuses})
			wantCode(t, err, codes.PermissionDenied, "")
			if !strings.Contains(err.Error(), "admins") {
				t.Errorf("denial of every user's runs says %q, not why", err)
			}

			// Bad input.
			for _, req := range []*servicev1.ListRunsRequest{
				{AppName: "gate", UserId: "bob", Statuses: []agentrunnerv1.RunStatus{99}},
				{AppName: "gate", UserId: "bob", Statuses: []agentrunnerv1.RunStatus{agentrunnerv1.RunStatus_RUN_STATUS_UNSPECIFIED}},
				{AppName: "gate", UserId: "bob", PageToken: "not a token"},
				{AppName: "gate", SessionId: "s1"},
			} {
				_, err := e.runner.ListRuns(root, req)
				wantCode(t, err, codes.InvalidArgument, "")
			}
			resp, err := e.runner.ListRuns(root, &servicev1.ListRunsRequest{AppName: "gate", UserId: "bob", PageSize: 1})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.runner.ListRuns(root, &servicev1.ListRunsRequest{AppName: "gate", UserId: "carol", PageToken: resp.GetNextPageToken()})
			wantCode(t, err, codes.InvalidArgument, "")

			// Runs that end leave the board.
			for _, msg := range []string{"c", "d", "f"} {
				g.release(msg)
			}
			for _, id := range []string{c, d, cf} {
				stream, err := e.runner.AttachRun(root, &servicev1.AttachRunRequest{RunId: id})
				if err != nil {
					t.Fatal(err)
				}
				toResult(collectRun(t, stream)).final(t)
			}
			want(listRuns(t, e, "root", &servicev1.ListRunsRequest{AppName: "gate", Statuses: activeStatuses}, 0))
		})
	}
}
