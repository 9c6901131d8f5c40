package bench

import (
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompare compares a build with itself over two rounds: every
// scenario has a figure per round from each build, with the server's CPU,
// and ratios near 1; the table names both builds.
func TestCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "agentrunner")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentrunner/agentrunner/cmd/agentrunner").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var progress strings.Builder
	o := Options{
		Binary: bin, App: "bench", Concurrency: []int{4}, Runs: 3, SingleRuns: 5,
		Lengths: []int{5}, LengthRuns: 3, StreamWords: 4,
	}
	c, err := Compare(t.Context(), o, bin, 2, &progress)
	if err != nil {
		t.Fatalf("compare: %v\n%s", err, progress.String())
	}
	want := map[string]bool{"single session, no streaming": true, "4 sessions, mixed": true, "16 sessions, SSE partials": true, "session of 5 events": true}
	for _, s := range c.Scenarios {
		if len(s.RunsPerSec) != 2 || len(s.BaselineRunsPerSec) != 2 || len(s.CPUMs) != 2 {
			t.Errorf("%s: %d and %d rounds, want 2 of each", s.Name, len(s.RunsPerSec), len(s.BaselineRunsPerSec))
		}
		// The same build against itself: far from 1 only on a machine
		// that changes its speed tenfold between two runs.
		if s.Ratio < 0.1 || s.Ratio > 10 || math.IsNaN(s.Ratio) {
			t.Errorf("%s: ratio %v", s.Name, s.Ratio)
		}
		if len(s.P99) != 2 || len(s.BaselineP99) != 2 || s.P99Ratio <= 0 {
			t.Errorf("%s: p99 %v, baseline %v, ratio %v", s.Name, s.P99, s.BaselineP99, s.P99Ratio)
		}
		// Only the streaming scenario is set against the loopback limit,
		// in every round under each build.
		if n := map[bool]int{true: 2, false: 0}[s.Name == "16 sessions, SSE partials"]; len(s.PartialsVsLoopback) != n || len(s.BaselinePartialsVsLoopback) != n {
			t.Errorf("%s: partials vs loopback %v and %v, want %d of each", s.Name, s.PartialsVsLoopback, s.BaselinePartialsVsLoopback, n)
		}
		delete(want, s.Name)
	}
	if len(want) > 0 {
		t.Errorf("scenarios missing: %v", want)
	}
	var out strings.Builder
	printComparison(&out, c)
	if !strings.Contains(out.String(), "baseline "+bin) || !strings.Contains(out.String(), "4 sessions, mixed") || !strings.Contains(out.String(), "loopback limit") {
		t.Errorf("table:\n%s", out.String())
	}
	if _, err := Compare(t.Context(), Options{Addr: "127.0.0.1:1"}, bin, 1, &progress); err == nil {
		t.Error("--baseline with --addr accepted")
	}
}
