package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/store/pgstore/pgtest"
)

// pg is this test binary's PostgreSQL cluster, started by the first test
// that needs one and stopped by TestMain.
var pg pgtest.Shared

func TestMain(m *testing.M) {
	// Re-executed as a fake peer by TestPeer (peer_test.go).
	if os.Getenv(fakePeerEnv) != "" {
		os.Exit(fakePeerMain())
	}
	os.Exit(pgtest.Main(m, &pg))
}

// TestReplicasNeedPostgres: more than one replica needs a postgres:// URL
// and servers the bench starts; the error says so before anything starts.
func TestReplicasNeedPostgres(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-replicas", "3"}, "needs --data postgres://"},
		{[]string{"-replicas", "2", "-data", "/tmp/x.db"}, "needs --data postgres://"},
		{[]string{"-replicas", "3", "-data", "postgres://h/db", "-addr", "127.0.0.1:1"}, "with --addr"},
		{[]string{"-replicas", "-1"}, "at least 1"},
	} {
		var out, errOut strings.Builder
		err := Main(t.Context(), tc.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench %q: %v; want an error saying %q", tc.args, err, tc.want)
		}
	}
}

// TestBenchThreeReplicasOnPostgres runs every scenario group, at small
// sizes, over three replicas on one database: each scenario completes all
// its runs, with the servers' CPU and memory measured, and the report
// names the replica count.
func TestBenchThreeReplicasOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	url := pg.URL(t)
	bin := filepath.Join(t.TempDir(), "agentrunner")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentrunner/agentrunner/cmd/agentrunner").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var progress strings.Builder
	rep, err := Run(t.Context(), Options{
		Binary: bin, App: "bench", Data: url, Replicas: 3,
		Concurrency: []int{6}, Runs: 2, SingleRuns: 3, Lengths: []int{5}, LengthRuns: 2,
		StoredSessions: 7, StreamWords: 4,
	}, &progress)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, progress.String())
	}
	if rep.Store != "postgres" || rep.Replicas != 3 {
		t.Errorf("report store %q, replicas %d; want postgres, 3", rep.Store, rep.Replicas)
	}
	want := map[string]int{"single session, no streaming": 3, "6 sessions, mixed": 12, "16 sessions, SSE partials": 16, "session of 5 events": 2, "7 sessions of 7 stored": 14}
	var cpuMs float64 // a few runs may take less than one tick of the CPU clock; all of them do not
	for _, r := range rep.Results {
		if n, ok := want[r.Name]; !ok || r.Runs != n || r.ServerCPUPerRunMs < 0 || r.PeakRSSMiB <= 0 {
			t.Errorf("result %q: %d runs, cpu %.2f ms/run, rss %.1f MiB; want %d runs, both measured", r.Name, r.Runs, r.ServerCPUPerRunMs, r.PeakRSSMiB, n)
		}
		cpuMs += r.ServerCPUPerRunMs * float64(r.Runs)
		delete(want, r.Name)
	}
	if cpuMs <= 0 {
		t.Errorf("no server CPU measured over all the scenarios")
	}
	if len(want) > 0 {
		t.Errorf("scenarios missing from the report: %v", want)
	}
	var out strings.Builder
	printReport(&out, rep)
	if !strings.Contains(out.String(), "store: postgres, 3 replicas") {
		t.Errorf("the report does not name the replicas:\n%s", out.String())
	}
}
