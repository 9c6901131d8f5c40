package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// runsCLI runs `agentrunner runs SUB --addr addr ARGS...` and returns its
// stdout, stderr and exit status.
func runsCLI(t *testing.T, tg Target, addr string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return tg.CLI(t, append([]string{"runs", args[0], "--addr", addr}, args[1:]...)...)
}

// mustRunsCLI is runsCLI for a command that must succeed.
func mustRunsCLI(t *testing.T, tg Target, addr string, args ...string) string {
	t.Helper()
	out, errOut, code := runsCLI(t, tg, addr, args...)
	if code != 0 {
		t.Fatalf("runs %q exited %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1] + "\n"
}

// RowOf returns the line of a `runs list` table that starts with id.
func RowOf(t *testing.T, table, id string) string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, id+" ") || line == id {
			return line
		}
	}
	t.Fatalf("runs list lacks %s:\n%s", id, table)
	return ""
}

// listedIDs returns the run ids of a `runs list` table, in order.
func listedIDs(table string) []string {
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
		ids = append(ids, strings.Fields(line)[0])
	}
	return ids
}

// runsListGetAttach lists, shows and follows runs of the demo app: the
// listed ids are those of the Run stream's records, newest first; get
// shows the record (and --json is the record itself); attach replays the
// stored events (after --after) and ends with the final status.
func runsListGetAttach(t *testing.T, tg Target) {
	srv := tg.Serve(t, "--data", filepath.Join(t.TempDir(), "a.db"))
	addr, rc := srv.Addr, srv.Runner()
	CreateSession(t, srv.Sessions(), "demo", "u", "s")
	first := RunToEnd(t, rc, &servicev1.RunRequest{AppName: "demo", UserId: "u", SessionId: "s", NewMessage: UserText("hello there"), RequestId: "req-1"})
	started, err := rc.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "demo", UserId: "u", SessionId: "s", NewMessage: UserText("once more, please")})
	if err != nil {
		t.Fatal(err)
	}
	second := started.GetRun().GetRunId()

	// attach follows the started run to its end, wherever it is now; once
	// it has ended, attach replays it from the store.
	live := mustRunsCLI(t, tg, addr, "attach", second)
	out := mustRunsCLI(t, tg, addr, "attach", second)
	rec, err := rc.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: second})
	if err != nil || rec.GetRun().GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("GetRun after attach: %v, %v; want SUCCEEDED", rec, err)
	}
	last := rec.GetRun()
	for _, want := range []string{
		fmt.Sprintf("run %s of demo/u/s: ", second),
		fmt.Sprintf("#%d you> once more, please\n", last.GetFirstSequence()),
		"[summary] Summary: 3 words, 14 letters, turn 2.",
		"=> greeter transfers to pipeline",
		fmt.Sprintf("run %s SUCCEEDED (events #%d-#%d)\n", second, last.GetFirstSequence(), last.GetLastSequence()),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("runs attach lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(live, lastLine(out)) {
		t.Errorf("runs attach of the live run ends\n%s\nwant the same final line as a replay, %q", live, lastLine(out))
	}

	// list: newest first, one line each, the request id on its run's line.
	out = mustRunsCLI(t, tg, addr, "list", "--app", "demo", "--user", "u", "--session", "s")
	if got, want := listedIDs(out), []string{second, first.GetRunId()}; !slices.Equal(got, want) {
		t.Fatalf("runs list ids %q, want %q (newest first):\n%s", got, want, out)
	}
	if row := RowOf(t, out, first.GetRunId()); !strings.Contains(row, " SUCCEEDED ") || !strings.Contains(row, " #1-#9 ") || !strings.HasSuffix(row, " req-1") {
		t.Errorf("row of the first run %q; want SUCCEEDED, #1-#9 and req-1", row)
	}

	// One page at a time: the hint names the token of the next page.
	out, errOut, code := runsCLI(t, tg, addr, "list", "--app", "demo", "--user", "u", "--session", "s", "--page-size", "1")
	m := regexp.MustCompile(`--page-token (\S+)`).FindStringSubmatch(errOut)
	if code != 0 || !slices.Equal(listedIDs(out), []string{second}) || m == nil {
		t.Fatalf("runs list --page-size 1 = %d\n%s\n%s; want the newest run and a token", code, out, errOut)
	}
	out = mustRunsCLI(t, tg, addr, "list", "--app", "demo", "--user", "u", "--session", "s", "--page-size", "1", "--page-token", m[1])
	if !slices.Equal(listedIDs(out), []string{first.GetRunId()}) {
		t.Fatalf("second page:\n%s", out)
	}

	checkGet(t, tg, addr, rc, first.GetRunId())

	// --after replays only the later events; flags may follow the id.
	out = mustRunsCLI(t, tg, addr, "attach", first.GetRunId(), "--after", "8")
	if !strings.Contains(out, "\n#9 [summary] Summary: 2 words, 10 letters, turn 1.\n") || strings.Contains(out, "#8 ") {
		t.Errorf("runs attach --after 8:\n%s", out)
	}
}

// checkGet checks `runs get` of a finished demo run, readable and as JSON.
func checkGet(t *testing.T, tg Target, addr string, rc servicev1.RunnerServiceClient, id string) {
	t.Helper()
	out := mustRunsCLI(t, tg, addr, "get", id)
	for _, want := range []string{"run:            " + id + "\n", "session:        demo/u/s\n", "status:         SUCCEEDED\n", "events:         #1-#9\n", "request id:     req-1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs get lacks %q:\n%s", want, out)
		}
	}
	out = mustRunsCLI(t, tg, addr, "get", "--json", id)
	var got agentrunnerv1.Run
	if err := protojson.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("runs get --json is not a Run: %v\n%s", err, out)
	}
	want, err := rc.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: id})
	if err != nil || !proto.Equal(&got, want.GetRun()) {
		t.Errorf("runs get --json = %v; GetRun = %v, %v", &got, want, err)
	}
}
