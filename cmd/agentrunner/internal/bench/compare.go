package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

// Comparison is what `bench -baseline OLD` measures: every scenario under
// two builds, the baseline and this one, in rounds that alternate them,
// so that a slow spell of a shared machine weighs on both. The figure to
// read is a scenario's Ratio, the median of the rounds' ratios: one round
// against the next may differ by a fifth on a busy virtual machine, and a
// ratio taken within a round cancels most of that.
type Comparison struct {
	Baseline  string               `json:"baseline"`
	Binary    string               `json:"binary"`
	Rounds    int                  `json:"rounds"`
	Scenarios []ScenarioComparison `json:"scenarios"`
}

// ScenarioComparison holds one scenario's figures, one per round.
type ScenarioComparison struct {
	Name               string    `json:"name"`
	BaselineRunsPerSec []float64 `json:"baseline_runs_per_sec"`
	RunsPerSec         []float64 `json:"runs_per_sec"`
	BaselineCPUMs      []float64 `json:"baseline_server_cpu_ms_per_run"`
	CPUMs              []float64 `json:"server_cpu_ms_per_run"`
	// Ratio is the median over the rounds of RunsPerSec / BaselineRunsPerSec:
	// above 1, this build is faster. CPURatio is the same of the server
	// CPU per run (above 1, this build spends more); zero when the CPU
	// was not measured.
	Ratio    float64 `json:"ratio"`
	CPURatio float64 `json:"cpu_ratio"`
	// P99 and BaselineP99 are the rounds' run latencies at the 99th
	// percentile (ms); P99Ratio the median of their ratios (above 1,
	// this build is slower).
	BaselineP99 []float64 `json:"baseline_p99_ms"`
	P99         []float64 `json:"p99_ms"`
	P99Ratio    float64   `json:"p99_ratio"`
	// Of the streaming scenario: its partial events per second over the
	// loopback limit measured in the same round, per round, under each
	// build (the goal is at least 0.5 in every round).
	BaselinePartialsVsLoopback []float64 `json:"baseline_partials_vs_loopback,omitempty"`
	PartialsVsLoopback         []float64 `json:"partials_vs_loopback,omitempty"`
}

// Compare runs every scenario rounds times under each build, baseline
// first in each round, and returns the figures; progress goes to w. The
// machine's limits are not measured (they do not depend on the build).
func Compare(ctx context.Context, o Options, baseline string, rounds int, w io.Writer) (*Comparison, error) {
	switch {
	case o.Addr != "":
		return nil, errors.New("--baseline with --addr: the bench compares builds only when it starts the servers")
	case rounds < 1:
		return nil, fmt.Errorf("--rounds %d: must be at least 1", rounds)
	}
	o.Limits = false
	// Runs in flight compare with adk-go (--peer), not between builds.
	o.Inflight = 0
	c := &Comparison{Baseline: baseline, Binary: o.Binary, Rounds: rounds}
	for r := range rounds {
		// The loopback limit of this round, against which the streaming
		// scenario's partial events are set: it moves with the machine's
		// load as much as they do.
		lim, err := measureStream(ctx, samplePartial(), 16, 20000)
		if err != nil {
			return nil, fmt.Errorf("round %d: loopback: %w", r+1, err)
		}
		for _, side := range []struct {
			binary string
			base   bool
		}{{baseline, true}, {o.Binary, false}} {
			fmt.Fprintf(w, "round %d of %d: %s\n", r+1, rounds, side.binary)
			ob := o
			ob.Binary = side.binary
			// The baseline may predate prices and budgets: it is served
			// the plain app, which measures what they cost this build.
			ob.Priced = o.Priced && !side.base
			if o.DataDir != "" {
				// Each build keeps files of its own: a newer one
				// migrates a file to a schema the older one refuses.
				ob.DataDir = filepath.Join(o.DataDir, map[bool]string{true: "baseline", false: "this"}[side.base])
			}
			rep, err := Run(ctx, ob, w)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", r+1, side.binary, err)
			}
			for _, res := range rep.Results {
				c.add(res, side.base, lim.MsgsPerSec)
			}
		}
	}
	for i := range c.Scenarios {
		c.Scenarios[i].finish()
	}
	return c, nil
}

// add records one scenario's result of one build in one round.
// loopback is the round's loopback stream limit (messages/s).
func (c *Comparison) add(res Result, base bool, loopback float64) {
	i := slices.IndexFunc(c.Scenarios, func(s ScenarioComparison) bool { return s.Name == res.Name })
	if i < 0 {
		c.Scenarios = append(c.Scenarios, ScenarioComparison{Name: res.Name})
		i = len(c.Scenarios) - 1
	}
	s := &c.Scenarios[i]
	var partials float64
	if res.Streaming == "sse" && loopback > 0 {
		partials = res.PartialPerSec / loopback
	}
	if base {
		s.BaselineRunsPerSec = append(s.BaselineRunsPerSec, res.RunsPerSec)
		s.BaselineCPUMs = append(s.BaselineCPUMs, res.ServerCPUPerRunMs)
		s.BaselineP99 = append(s.BaselineP99, res.LatencyMs.P99)
		if partials > 0 {
			s.BaselinePartialsVsLoopback = append(s.BaselinePartialsVsLoopback, partials)
		}
		return
	}
	s.RunsPerSec = append(s.RunsPerSec, res.RunsPerSec)
	s.CPUMs = append(s.CPUMs, res.ServerCPUPerRunMs)
	s.P99 = append(s.P99, res.LatencyMs.P99)
	if partials > 0 {
		s.PartialsVsLoopback = append(s.PartialsVsLoopback, partials)
	}
}

// finish computes the medians of the rounds' ratios.
func (s *ScenarioComparison) finish() {
	s.Ratio = medianRatio(s.RunsPerSec, s.BaselineRunsPerSec)
	s.CPURatio = medianRatio(s.CPUMs, s.BaselineCPUMs)
	s.P99Ratio = medianRatio(s.P99, s.BaselineP99)
}

// medianRatio is the median of a[i]/b[i] over the rounds where b[i] is
// positive; zero when there is none.
func medianRatio(a, b []float64) float64 {
	var r []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			r = append(r, a[i]/b[i])
		}
	}
	return median(r)
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	x = slices.Sorted(slices.Values(x))
	if n := len(x); n%2 == 0 {
		return (x[n/2-1] + x[n/2]) / 2
	}
	return x[len(x)/2]
}

// printComparison writes the comparison as a table: medians of each
// build's figures and the medians of the rounds' ratios.
func printComparison(w io.Writer, c *Comparison) {
	fmt.Fprintf(w, "baseline %s\nthis     %s\n%d rounds, alternating; ratios are medians of the rounds' ratios\n\n", c.Baseline, c.Binary, c.Rounds)
	fmt.Fprintf(w, "%34s  %13s  %13s  %9s  %16s  %9s  %18s  %7s\n", "scenario", "baseline r/s", "this r/s", "runs/s ×", "cpu ms/run b→t", "cpu ×", "p99 ms b→t", "p99 ×")
	for _, s := range c.Scenarios {
		fmt.Fprintf(w, "%34s  %13.0f  %13.0f  %9.2f  %7.2f → %6.2f  %9.2f  %8.2f → %7.2f  %7.2f\n", s.Name,
			median(s.BaselineRunsPerSec), median(s.RunsPerSec), s.Ratio,
			median(s.BaselineCPUMs), median(s.CPUMs), s.CPURatio,
			median(s.BaselineP99), median(s.P99), s.P99Ratio)
	}
	for _, s := range c.Scenarios {
		if len(s.PartialsVsLoopback) > 0 {
			fmt.Fprintf(w, "\n%s, partial events/s ÷ the round's loopback limit (goal ≥ 0.5 in every round):\n  baseline %s\n  this     %s\n",
				s.Name, fmtList(s.BaselinePartialsVsLoopback), fmtList(s.PartialsVsLoopback))
		}
	}
}

func fmtList(x []float64) string {
	var b strings.Builder
	for i, v := range x {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%.2f", v)
	}
	return b.String()
}
