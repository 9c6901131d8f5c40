package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// The runs-in-flight scenario holds many streaming runs open at once on a
// model at a real model's pace: its first chunk after InflightFirst, then
// inflightChunks chunks InflightGap apart. What it measures is what one
// open run costs a server (memory, goroutines), the CPU of a streamed
// chunk at that concurrency, and the time a loaded server adds to the
// time to first token.

// inflightChunks is how many partial events a paced answer is cut into.
const inflightChunks = 8

// inflightConfig is the apps file of a runs-in-flight server: the bench
// app on the offline model with its delays.
const inflightConfig = `models:
  - name: paced
    provider: offline
    offline: { first_chunk_delay: %s, chunk_delay: %s, chunks: %d }
apps:
  - name: %s
    description: Runs-in-flight benchmark app (the offline model at a real model's pace).
    root_agent:
      name: answer
      description: Answers with the offline model, paced.
      llm: { model: paced }
`

// InflightResult is what the runs-in-flight scenario measured on one
// server. Memory and goroutines are read once, when every session has a
// run open (the middle of the plateau), against the same figures read
// before the first run: the difference over the runs open then is what
// one in-flight run costs.
type InflightResult struct {
	Side       string  `json:"side,omitempty"`
	Sessions   int     `json:"sessions"` // runs meant to be open at once
	Runs       int     `json:"runs"`     // runs that succeeded
	Failed     int     `json:"failed_runs"`
	FirstError string  `json:"first_error,omitempty"`
	Seconds    float64 `json:"seconds"`
	// InFlight is the number of runs open when memory and goroutines
	// were read.
	InFlight int `json:"in_flight"`
	// Chunks is the partial events the client received.
	Chunks       int     `json:"chunks"`
	RSSIdleMiB   float64 `json:"rss_idle_mib"`
	RSSMiB       float64 `json:"rss_mib"`
	RSSPerRunKiB float64 `json:"rss_kib_per_run"`
	// RSSFile* is the part of the RSS that maps files (the binary, a
	// bbolt data file's pages touched), not the heap and stacks.
	RSSFileIdleMiB   float64 `json:"rss_file_idle_mib"`
	RSSFileMiB       float64 `json:"rss_file_mib"`
	RSSFilePerRunKiB float64 `json:"rss_file_kib_per_run"`
	GoroutinesIdle   int     `json:"goroutines_idle"`
	Goroutines       int     `json:"goroutines"`
	// GoroutinesPerRun is (Goroutines - GoroutinesIdle) / InFlight.
	GoroutinesPerRun float64 `json:"goroutines_per_run"`
	// CPUPerChunkUs is the server's CPU over the whole scenario (runs'
	// starts and ends included) per partial event streamed.
	CPUPerChunkUs float64 `json:"server_cpu_us_per_chunk"`
	// AddedFirstMs is the time to the first partial event the client saw
	// minus the model's own (its first-chunk delay): what the server adds.
	AddedFirstMs Pcts    `json:"added_first_token_ms"`
	ModelFirstMs float64 `json:"model_first_token_ms"`
}

// inflightSpec is one runs-in-flight scenario.
type inflightSpec struct {
	sessions int           // runs open at once, one per session
	runs     int           // sequential runs per session
	first    time.Duration // the model's first-chunk delay
	gap      time.Duration // between its later chunks
	id       func(i int) string
}

// duration is how long one run takes the model.
func (s inflightSpec) duration() time.Duration {
	return s.first + time.Duration(inflightChunks)*s.gap
}

// probe reads a server's memory, goroutines and CPU; with profiles set,
// it also saves the server's CPU profile over the scenario and its heap
// and goroutine profiles at the plateau there.
type probe struct {
	srv      *serverProc
	http     *http.Client
	profiles string
}

// save writes the debug endpoint's path to file in p.profiles.
func (p probe) save(ctx context.Context, path, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.srv.debug+path, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(filepath.Join(p.profiles, file))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// goroutines is the goroutine count of the server's pprof endpoint.
func (p probe) goroutines(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.srv.debug+"/debug/pprof/goroutine?debug=1", nil)
	if err != nil {
		return 0, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("goroutine profile: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	n, ok := strings.CutPrefix(strings.TrimSpace(line), "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("goroutine profile starts %q", line)
	}
	return strconv.Atoi(n)
}

// sample reads RSS and its file-backed part (MiB) and goroutines.
func (p probe) sample(ctx context.Context) (float64, float64, int, error) {
	kib, err := memKiB(p.srv.cmd.Process.Pid, "VmRSS")
	if err != nil {
		return 0, 0, 0, err
	}
	file, err := memKiB(p.srv.cmd.Process.Pid, "RssFile")
	if err != nil {
		return 0, 0, 0, err
	}
	g, err := p.goroutines(ctx)
	return float64(kib) / 1024, float64(file) / 1024, g, err
}

// driveInflight runs spec against c, whose server p reads. Session i
// starts its first run at i/sessions of a run's duration, so that runs
// arrive at a steady rate (sessions per run's duration) and, from one
// duration on, every session has a run open; then it runs again at once,
// spec.runs times in all. Failed runs are counted.
func driveInflight(ctx context.Context, c runClients, p probe, spec inflightSpec, w io.Writer) (InflightResult, error) {
	res := InflightResult{Sessions: spec.sessions, ModelFirstMs: float64(spec.first.Microseconds()) / 1000}
	var err error
	if res.RSSIdleMiB, res.RSSFileIdleMiB, res.GoroutinesIdle, err = p.sample(ctx); err != nil {
		return res, err
	}
	cpu0, err := servers{p.srv}.cpuSeconds()
	if err != nil {
		return res, err
	}
	profiled := make(chan error, 1)
	if p.profiles != "" {
		secs := int((spec.duration()*time.Duration(spec.runs+1) + time.Second - 1) / time.Second)
		go func() { profiled <- p.save(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), "cpu.pprof") }()
	} else {
		profiled <- nil
	}
	var t tally
	var open atomic.Int64
	var wg sync.WaitGroup
	dur := spec.duration()
	start := time.Now()
	text := message(8)
	ls := loadSpec{name: "runs in flight", tolerate: true}
	for i := range spec.sessions {
		wg.Go(func() {
			if !sleepUntil(ctx, start.Add(dur*time.Duration(i)/time.Duration(spec.sessions))) {
				return
			}
			user, sid := fmt.Sprintf("bench-user-%d", i%64), spec.id(i)
			for r := range spec.runs {
				open.Add(1)
				st, err := c.runner(i).run(ctx, user, sid, text, true)
				open.Add(-1)
				t.add(ls, sid, r, st, err, nil)
			}
		})
	}
	// The plateau: from one duration on every session has a run open,
	// until the first sessions' last runs end.
	var serr error
	if sleepUntil(ctx, start.Add(dur+dur*time.Duration(spec.runs-1)/2)) {
		res.InFlight = int(open.Load())
		res.RSSMiB, res.RSSFileMiB, res.Goroutines, serr = p.sample(ctx)
		if p.profiles != "" && serr == nil {
			serr = errors.Join(p.save(ctx, "/debug/pprof/heap", "heap.pprof"), p.save(ctx, "/debug/pprof/goroutine?debug=1", "goroutines.txt"), p.save(ctx, "/debug/pprof/heap?debug=1", "heap.txt"))
		}
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	serr = errors.Join(serr, <-profiled)
	cpu1, err := servers{p.srv}.cpuSeconds()
	if err != nil || serr != nil {
		return res, fmt.Errorf("reading the server: %w", errors.Join(err, serr))
	}
	res.Runs, res.Failed, res.Chunks = len(t.fst), t.failed, t.total.p
	if t.firstErr != nil {
		res.FirstError = t.firstErr.Error()
		fmt.Fprintf(w, "%-40s %8d runs failed, the first: %s\n", "", res.Failed, res.FirstError)
	}
	if res.InFlight > 0 {
		res.RSSPerRunKiB = (res.RSSMiB - res.RSSIdleMiB) * 1024 / float64(res.InFlight)
		res.RSSFilePerRunKiB = (res.RSSFileMiB - res.RSSFileIdleMiB) * 1024 / float64(res.InFlight)
		res.GoroutinesPerRun = float64(res.Goroutines-res.GoroutinesIdle) / float64(res.InFlight)
	}
	if res.Chunks > 0 {
		res.CPUPerChunkUs = (cpu1 - cpu0) * 1e6 / float64(res.Chunks)
	}
	added := make([]time.Duration, len(t.fst))
	for i, f := range t.fst {
		added[i] = f - spec.first
	}
	res.AddedFirstMs = percentiles(added)
	return res, nil
}

// sleepUntil waits until at, or until ctx ends (then false).
func sleepUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// inflightServer starts an agentrunner server for the runs-in-flight
// scenario in dir: the paced app, a debug endpoint for its goroutines,
// and room for every run (--max-runs).
func inflightServer(ctx context.Context, o Options, dir string) (*serverProc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	debug, err := freePort()
	if err != nil {
		return nil, err
	}
	config := fmt.Sprintf(inflightConfig, o.InflightFirst, o.InflightGap, inflightChunks, o.App)
	extra := []string{"--debug-addr", debug, "--max-runs", strconv.Itoa(o.Inflight + 64)}
	p, err := startServerWith(ctx, o.Binary, dir, config, "", extra)
	if err != nil {
		return nil, err
	}
	p.debug = "http://" + debug
	return p, nil
}

// inflightOurs runs the scenario on a new agentrunner server in dir.
func inflightOurs(ctx context.Context, o Options, dir, tag string, w io.Writer) (InflightResult, error) {
	p, err := inflightServer(ctx, o, dir)
	if err != nil {
		return InflightResult{}, err
	}
	defer p.kill()
	c, closeConn, err := dialReplicas([]string{p.addr}, o.App)
	if err != nil {
		return InflightResult{}, err
	}
	defer closeConn()
	spec := o.inflightSpec(tag)
	var done atomic.Int64
	if err := createSessions(ctx, c, spec.sessions, spec.id, &done); err != nil {
		return InflightResult{}, fmt.Errorf("runs in flight: create sessions: %w\nserver log:\n%s", err, tail(p.logs.String(), 2000))
	}
	res, err := driveInflight(ctx, c, probe{srv: p, http: &http.Client{Timeout: 30 * time.Second}, profiles: o.InflightProfiles}, spec, w)
	res.Side = sideOurs
	if err != nil {
		return res, fmt.Errorf("runs in flight: %w\nserver log:\n%s", err, tail(p.logs.String(), 2000))
	}
	printInflightLine(w, res)
	return res, p.stop()
}

// inflightSpec is the scenario o asks for, its session ids tagged.
func (o Options) inflightSpec(tag string) inflightSpec {
	return inflightSpec{sessions: o.Inflight, runs: max(o.InflightRuns, 1), first: o.InflightFirst, gap: o.InflightGap,
		id: func(i int) string { return fmt.Sprintf("inflight-%s-%d", tag, i) }}
}

// inflightGroup runs the runs-in-flight scenario of `bench`, when asked.
func inflightGroup(ctx context.Context, o Options, dir, tag string, w io.Writer, rep *Report) error {
	if o.Inflight <= 0 || o.Addr != "" || o.Data != "" {
		return nil
	}
	res, err := inflightOurs(ctx, o, filepath.Join(dir, "inflight"), tag, w)
	if err != nil {
		return err
	}
	rep.InFlight = &res
	return nil
}

func printInflightLine(w io.Writer, r InflightResult) {
	fmt.Fprintf(w, "%-40s %d open: %.1f KiB and %.2f goroutines a run, %.1f µs CPU a chunk, first token +%.2f ms p99\n",
		r.Side+", runs in flight", r.InFlight, r.RSSPerRunKiB, r.GoroutinesPerRun, r.CPUPerChunkUs, r.AddedFirstMs.P99)
}

// printInflight writes the runs-in-flight figures of a report.
func printInflight(w io.Writer, r *InflightResult) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\nruns in flight: %d sessions × %d streamed runs, model first chunk after %.0f ms then %d chunks; %d open when read, %d runs, %d failed\n",
		r.Sessions, max(1, r.Runs/max(1, r.Sessions)), r.ModelFirstMs, inflightChunks, r.InFlight, r.Runs, r.Failed)
	fmt.Fprintf(w, "  rss %.1f → %.1f MiB (%.1f KiB a run), goroutines %d → %d (%.2f a run), server CPU %.1f µs a chunk (%d chunks), first token added p50 %.2f p95 %.2f p99 %.2f ms\n",
		r.RSSIdleMiB, r.RSSMiB, r.RSSPerRunKiB, r.GoroutinesIdle, r.Goroutines, r.GoroutinesPerRun, r.CPUPerChunkUs, r.Chunks,
		r.AddedFirstMs.P50, r.AddedFirstMs.P95, r.AddedFirstMs.P99)
	fmt.Fprintf(w, "  of the rss, mapped files (the binary, the data file) %.1f → %.1f MiB (%.1f KiB a run)\n",
		r.RSSFileIdleMiB, r.RSSFileMiB, r.RSSFilePerRunKiB)
}

// printPeerInflight writes the runs-in-flight rows of a side-by-side:
// each side's medians over the rounds, and the medians of the rounds'
// ratios of agentrunner's memory and CPU to adk-go's (below 1,
// agentrunner spends less).
func printPeerInflight(w io.Writer, rs []InflightResult) {
	if len(rs) == 0 {
		return
	}
	by := map[string][]InflightResult{}
	for _, r := range rs {
		by[r.Side] = append(by[r.Side], r)
	}
	fig := func(side string, f func(InflightResult) float64) float64 {
		var v []float64
		for _, r := range by[side] {
			v = append(v, f(r))
		}
		return median(v)
	}
	ratio := func(f func(InflightResult) float64) float64 {
		var ours, theirs []float64
		for _, r := range by[sideOurs] {
			ours = append(ours, f(r))
		}
		for _, r := range by[sidePeerMem] {
			theirs = append(theirs, f(r))
		}
		return medianRatio(ours, theirs)
	}
	r0 := rs[0]
	fmt.Fprintf(w, "\nruns in flight: %d sessions with a streamed run open each (%d runs a session in a row), model's first chunk after %.0f ms then %d chunks; medians of %d rounds\n",
		r0.Sessions, max(1, (r0.Runs+r0.Failed)/max(1, r0.Sessions)), r0.ModelFirstMs, inflightChunks, len(by[sideOurs]))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "side\topen when read\tRSS KiB/run\tgoroutines/run\tCPU µs/chunk\tfirst token added p50\tp95\tp99 ms\tfailed runs\t")
	for _, side := range []string{sideOurs, sidePeerMem} {
		failed := 0
		for _, r := range by[side] {
			failed += r.Failed
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.2f\t%.1f\t%.2f\t%.2f\t%.2f\t%d\t\n", side,
			fig(side, func(r InflightResult) float64 { return float64(r.InFlight) }),
			fig(side, func(r InflightResult) float64 { return r.RSSPerRunKiB }),
			fig(side, func(r InflightResult) float64 { return r.GoroutinesPerRun }),
			fig(side, func(r InflightResult) float64 { return r.CPUPerChunkUs }),
			fig(side, func(r InflightResult) float64 { return r.AddedFirstMs.P50 }),
			fig(side, func(r InflightResult) float64 { return r.AddedFirstMs.P95 }),
			fig(side, func(r InflightResult) float64 { return r.AddedFirstMs.P99 }), failed)
	}
	tw.Flush()
	fmt.Fprintf(w, "agentrunner ÷ adk-go memory (median of the rounds' ratios): RSS a run %.2f, CPU a chunk %.2f\n",
		ratio(func(r InflightResult) float64 { return r.RSSPerRunKiB }), ratio(func(r InflightResult) float64 { return r.CPUPerChunkUs }))
}
