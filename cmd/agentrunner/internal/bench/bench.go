// Package bench is `agentrunner bench`: a load benchmark that drives a
// server through the real gRPC API with the offline model at zero latency,
// measures what the machine allows (the fsync rate of the data directory's
// disk and the loopback gRPC stream rate, with the same write pattern and
// message sizes), and prints each figure beside its limit.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// Options configure a bench run; Main fills them from flags.
type Options struct {
	Addr    string // target server; empty starts one per scenario group
	Binary  string // agentrunner binary to start; empty means this one
	App     string
	DataDir string // where started servers keep their files; empty means a temp dir
	Data    string // store of started servers: a postgres:// URL, or empty for a bbolt file each
	// Replicas is how many servers each scenario group starts on Data (a
	// postgres:// URL when more than one); session i goes to replica i
	// mod Replicas. Zero means one.
	Replicas       int
	Concurrency    []int
	Runs           int // runs per session in the concurrency scenarios
	SingleRuns     int // runs in the single-session scenario
	Lengths        []int
	LengthRuns     int
	StoredSessions int
	StreamWords    int
	// StreamPartials is the least number of partial events the streaming
	// scenario streams: its runs per session are raised to reach it, so
	// that its rate, set against the loopback limit, is not that of a
	// fraction of a second. Zero leaves them at Runs/2.
	StreamPartials int
	// Inflight is how many streaming runs the runs-in-flight scenario
	// holds open at once (0 skips it); InflightRuns how many each of its
	// sessions makes in a row; InflightFirst and InflightGap the paced
	// model's first-chunk delay and the gap between its later chunks.
	Inflight      int
	InflightRuns  int
	InflightFirst time.Duration
	InflightGap   time.Duration
	// InflightProfiles, when set, is a directory where the scenario saves
	// agentrunner's CPU profile over it and heap and goroutine profiles
	// at its plateau.
	InflightProfiles string
	// Only names the scenario groups to run (load, lengths, stored,
	// inflight); empty runs them all.
	Only   []string
	Limits bool
	JSON   string
	// Priced serves the app on a priced model with budgets of every kind
	// set far above what the bench spends, so that every call is priced,
	// counted in the daily ledger and checked against the budgets.
	Priced bool
}

// Report is everything a bench run measured; it is also the JSON output.
type Report struct {
	Started time.Time `json:"started"`
	Store   string    `json:"store"` // "bbolt" or "postgres"
	// Replicas is how many servers shared the store in each group.
	Replicas int `json:"replicas"`
	Limits   struct {
		FsyncSingle FsyncLimit  `json:"fsync_single"`
		FsyncBatch  FsyncLimit  `json:"fsync_batch"`
		BatchEvents int         `json:"batch_events"`
		Stream      StreamLimit `json:"stream"`
	} `json:"limits"`
	Results []Result          `json:"results"`
	Ratios  map[string]Target `json:"ratios"`
	// InFlight is the runs-in-flight scenario, when it ran.
	InFlight *InflightResult `json:"in_flight,omitempty"`
}

// Target is one of our figures against its limit.
type Target struct {
	Figure float64 `json:"figure"`
	Limit  float64 `json:"limit"`
	Ratio  float64 `json:"ratio"`
	Goal   string  `json:"goal"`
	Met    bool    `json:"met"`
}

func intList(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(f), "_", ""))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad number %q in %q", f, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// Main parses args (after "bench") and runs the benchmark.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentrunner bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	var conc, lengths string
	fs.StringVar(&o.Addr, "addr", "", "benchmark the server at this address instead of starting one (then server CPU, RSS and file figures are not measured)")
	fs.StringVar(&o.Binary, "binary", "", "agentrunner binary to start as the server (default: this executable)")
	fs.StringVar(&o.App, "app", "bench", "app to run; a started server serves it on the offline model")
	fs.StringVar(&o.DataDir, "data-dir", "", "directory for the started servers' data files, whose disk is measured (default: a new temp dir, removed afterwards)")
	fs.StringVar(&o.Data, "data", "", "store of the started servers: empty for a bbolt file each (in --data-dir), or a postgres:// `URL` every started server uses (the bench's sessions are tagged, so a database may be reused)")
	fs.IntVar(&o.Replicas, "replicas", 1, "servers to start on the --data database for each scenario group (more than 1 needs a postgres:// --data); each session sticks to one, round-robin, as behind a load balancer with session affinity; server CPU is summed over them")
	fs.StringVar(&conc, "sessions", "1,16,256", "concurrent sessions of the mixed (half streaming) scenarios")
	fs.IntVar(&o.Runs, "runs", 20, "sequential runs per session in the concurrent scenarios")
	fs.IntVar(&o.SingleRuns, "single-runs", 300, "runs of the single-session overhead scenario")
	fs.StringVar(&lengths, "lengths", "10,1000,100000", "session lengths (stored events) to pre-grow sessions to")
	fs.IntVar(&o.LengthRuns, "length-runs", 100, "runs on each pre-grown session")
	fs.IntVar(&o.StoredSessions, "stored-sessions", 100000, "sessions stored before the memory scenario (0 skips it)")
	fs.IntVar(&o.StreamWords, "stream-words", 200, "words per answer in the streaming scenario (one partial event each)")
	fs.IntVar(&o.StreamPartials, "stream-partials", 100000, "least partial events the streaming scenario streams; its runs per session are raised to reach it (0: --runs/2)")
	fs.BoolVar(&o.Priced, "priced", false, "serve the app on a priced offline model with run, session, user and app budgets set far above what the bench spends, so that prices, the spend ledger and the budget checks are measured (with --baseline, the baseline is served the plain app)")
	var only string
	inflightFlags(fs, &o, &only)
	fs.BoolVar(&o.Limits, "limits", true, "measure the machine's fsync and loopback stream limits")
	fs.StringVar(&o.JSON, "json", "", "also write the report as JSON to this file (- for stdout)")
	var baseline string
	var rounds int
	fs.StringVar(&baseline, "baseline", "", "compare with this other agentrunner `binary`: each scenario runs under both builds, alternating, --rounds times, and the report gives the medians of the rounds' ratios (the machine's limits are not measured)")
	fs.IntVar(&rounds, "rounds", 3, "rounds of a --baseline or --peer comparison")
	var peer string
	fs.StringVar(&peer, "peer", "", "side-by-side with adk-go: the peer `binary` built from examples/peer/adkgo (go build -C examples/peer/adkgo -o \"$PWD/.tmp/adkpeer\" .), which serves adk-go's REST API on the same zero-latency model; the single-session and --sessions mixed workloads run on agentrunner, on the peer with adk-go's in-memory sessions and on it with its SQLite sessions (with a postgres:// --data: agentrunner and the peer with adk-go's database sessions, both on that database), alternating, --rounds times, and one table gives the ratios; exits non-zero if any run failed on any side (docs/performance.md)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: agentrunner bench [flags]\n\n"+
			"Drives agentrunner through its gRPC API with the offline model at zero latency and\n"+
			"prints runs/s, persisted events/s, streamed messages/s, run latency and time to first\n"+
			"event (p50/p95/p99), server CPU per run, peak RSS and bytes per stored event, each\n"+
			"beside the limit this machine allows.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	rest, err := cliflags.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("bench takes no arguments, got %q", rest)
	}
	if err := finishOptions(&o, conc, lengths, only); err != nil {
		return err
	}
	if peer != "" {
		if baseline != "" {
			return errors.New("--peer and --baseline: choose one")
		}
		return peerMain(ctx, o, peer, rounds, stdout, stderr)
	}
	if baseline != "" {
		c, err := Compare(ctx, o, baseline, rounds, stderr)
		if err != nil {
			return err
		}
		printComparison(stdout, c)
		return writeJSON(o.JSON, stdout, c)
	}
	rep, err := Run(ctx, o, stderr)
	if err != nil {
		return err
	}
	printReport(stdout, rep)
	return writeJSON(o.JSON, stdout, rep)
}

// finishOptions fills what Main's flags give as text (the lists) and the
// default binary, and checks the replicas.
func finishOptions(o *Options, conc, lengths, only string) error {
	var err error
	if o.Concurrency, err = intList(conc); err != nil {
		return fmt.Errorf("--sessions: %w", err)
	}
	if o.Lengths, err = intList(lengths); err != nil {
		return fmt.Errorf("--lengths: %w", err)
	}
	if err := checkReplicas(*o); err != nil {
		return err
	}
	if o.Only, err = groupList(only); err != nil {
		return err
	}
	if o.Binary == "" && o.Addr == "" {
		if o.Binary, err = os.Executable(); err != nil {
			return err
		}
	}
	return nil
}

// inflightFlags are the flags of the runs-in-flight scenario and --only.
func inflightFlags(fs *flag.FlagSet, o *Options, only *string) {
	fs.IntVar(&o.Inflight, "inflight", 2000, "streaming runs the runs-in-flight scenario holds open at once, one per session, on the offline model at a real model's pace (0 skips it); it reports server memory and goroutines per open run, server CPU per streamed chunk and the time the server adds to the first token")
	fs.IntVar(&o.InflightRuns, "inflight-runs", 2, "runs each session of the runs-in-flight scenario makes in a row")
	fs.DurationVar(&o.InflightFirst, "inflight-first-chunk", time.Second, "the paced model's time to its first chunk in the runs-in-flight scenario")
	fs.StringVar(&o.InflightProfiles, "inflight-profiles", "", "`directory` where the runs-in-flight scenario saves agentrunner's CPU profile over it (cpu.pprof) and its heap and goroutine profiles when every run is open (heap.pprof, heap.txt with the runtime's memory statistics, goroutines.txt)")
	fs.DurationVar(&o.InflightGap, "inflight-chunk-gap", 250*time.Millisecond, "the paced model's time between its later chunks (8 in all) in the runs-in-flight scenario")
	fs.StringVar(only, "only", "", "run only these scenario groups, comma-separated: load (single session, --sessions, streaming), lengths, stored, inflight (default: all)")
}

// groupList parses --only.
func groupList(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.ContainsFunc(scenarioGroups, func(g scenarioGroup) bool { return g.name == f }) {
			return nil, fmt.Errorf("--only: no scenario group %q (load, lengths, stored, inflight)", f)
		}
		out = append(out, f)
	}
	return out, nil
}

// peerMain runs `bench --peer` and prints its table (and JSON), also when
// runs failed: the table shows where, and the error fails the command.
func peerMain(ctx context.Context, o Options, peer string, rounds int, stdout, stderr io.Writer) error {
	pc, err := Peer(ctx, o, peer, rounds, stderr)
	if pc != nil {
		printPeer(stdout, pc)
		if jerr := writeJSON(o.JSON, stdout, pc); jerr != nil {
			return errors.Join(err, jerr)
		}
	}
	return err
}

// writeJSON writes v as indented JSON to the file at path, or to stdout
// when path is "-"; nothing when path is empty.
func writeJSON(path string, stdout io.Writer, v any) error {
	if path != "" {
		b, _ := json.MarshalIndent(v, "", "  ")
		if path == "-" {
			_, err := stdout.Write(append(b, '\n'))
			return err
		}
		return os.WriteFile(path, append(b, '\n'), 0o644)
	}
	return nil
}

// checkReplicas refuses a replica count that cannot work: several
// servers share only a PostgreSQL database, and --addr starts none.
func checkReplicas(o Options) error {
	switch {
	case o.Replicas < 0:
		return fmt.Errorf("--replicas %d: must be at least 1", o.Replicas)
	case o.Replicas <= 1:
		return nil
	case o.Addr != "":
		return fmt.Errorf("--replicas %d with --addr: the bench starts replicas only when it starts the servers", o.Replicas)
	case !isPostgresURL(o.Data):
		return fmt.Errorf("--replicas %d needs --data postgres://…: replicas share one PostgreSQL database (a bbolt file serves one process)", o.Replicas)
	}
	return nil
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// progress prints a status line to w every second until stop is called.
func progress(w io.Writer, label string, done *atomic.Int64, total int) (stop func()) {
	quit := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-quit:
				fmt.Fprintf(w, "\r%-60s\r", "")
				return
			case <-t.C:
				fmt.Fprintf(w, "\r%s: %d/%d (%.0fs)   ", label, done.Load(), total, time.Since(start).Seconds())
			}
		}
	}()
	return func() { close(quit); <-finished }
}

// Run runs every scenario and returns the report; progress goes to w.
func Run(ctx context.Context, o Options, w io.Writer) (*Report, error) {
	if err := checkReplicas(o); err != nil {
		return nil, err
	}
	o.Replicas = max(o.Replicas, 1)
	rep := &Report{Started: time.Now().UTC(), Ratios: map[string]Target{}, Store: "bbolt", Replicas: o.Replicas}
	if o.Data != "" {
		rep.Store = "postgres"
	}
	// Session ids carry the run's start, so that benching the same server
	// (--addr) twice never collides with the sessions of the last run.
	tag := strconv.FormatInt(rep.Started.UnixNano(), 36)
	dir := o.DataDir
	if dir == "" {
		d, err := os.MkdirTemp("", "agentrunner-bench-*")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if err := measureLimits(ctx, o, dir, w, rep); err != nil {
		return nil, err
	}
	for _, g := range scenarioGroups {
		if len(o.Only) > 0 && !slices.Contains(o.Only, g.name) {
			continue
		}
		if err := g.run(ctx, o, dir, tag, w, rep); err != nil {
			return nil, err
		}
	}
	computeRatios(rep, o)
	return rep, nil
}

// scenarioGroup is a group of scenarios on a server of its own.
type scenarioGroup struct {
	name string
	run  func(context.Context, Options, string, string, io.Writer, *Report) error
}

// scenarioGroups are the groups of scenarios Run runs, by the names
// --only takes.
var scenarioGroups = []scenarioGroup{{"load", loadGroup}, {"lengths", lengthGroup}, {"stored", storedGroup}, {"inflight", inflightGroup}}

// measureLimits measures what this machine allows, when asked: fsync of
// dir alone and batched, and loopback gRPC streams.
func measureLimits(ctx context.Context, o Options, dir string, w io.Writer, rep *Report) error {
	maxConc := 1
	for _, c := range o.Concurrency {
		maxConc = max(maxConc, c)
	}
	rep.Limits.BatchEvents = maxConc
	if !o.Limits {
		return nil
	}
	fmt.Fprintln(w, "measuring limits: fsync of", dir, "and loopback gRPC streams")
	// Our commits write about two pages per event: the event's leaf and
	// its session record's leaf.
	var err error
	if rep.Limits.FsyncSingle, err = measureFsync(ctx, dir, 2*4096, 3*time.Second); err != nil {
		return err
	}
	if rep.Limits.FsyncBatch, err = measureFsync(ctx, dir, maxConc*2*4096, 3*time.Second); err != nil {
		return err
	}
	rep.Limits.Stream, err = measureStream(ctx, samplePartial(), 16, 20000)
	return err
}

// streamRuns is how many runs each of the streaming scenario's sessions
// makes: half of --runs, or more when that streams fewer than
// --stream-partials partial events over all of them.
func streamRuns(o Options, sessions int) int {
	runs := max(1, o.Runs/2)
	if per := sessions * max(1, o.StreamWords); o.StreamPartials > runs*per {
		runs = (o.StreamPartials + per - 1) / per
	}
	return runs
}

// loadGroup runs the concurrency scenarios on one server (or one set of
// replicas).
func loadGroup(ctx context.Context, o Options, dir, tag string, w io.Writer, rep *Report) error {
	return withServer(ctx, o, dir, "load", func(c replicas, srv servers) error {
		specs := []loadSpec{{name: "single session, no streaming", sessions: 1, runs: o.SingleRuns, words: 8, streaming: "none"}}
		for _, n := range o.Concurrency {
			specs = append(specs, loadSpec{name: fmt.Sprintf("%d sessions, mixed", n), sessions: n, runs: o.Runs, words: 8, streaming: "mixed"})
		}
		specs = append(specs, loadSpec{name: "16 sessions, SSE partials", sessions: 16, runs: streamRuns(o, 16), words: o.StreamWords, streaming: "sse"})
		for si, spec := range specs {
			spec.sessionID = func(i int) string { return fmt.Sprintf("load-%s-%d-%d", tag, si, i) }
			var created atomic.Int64
			if err := createSessions(ctx, c, spec.sessions, spec.sessionID, &created); err != nil {
				return err
			}
			res, err := measured(ctx, w, c, srv, spec)
			if err != nil {
				return err
			}
			rep.Results = append(rep.Results, res)
		}
		return nil
	})
}

// lengthGroup runs one session pre-grown to each length, each on its own
// server so that its file can be inspected afterwards.
func lengthGroup(ctx context.Context, o Options, dir, tag string, w io.Writer, rep *Report) error {
	for _, n := range o.Lengths {
		var res Result
		err := withServer(ctx, o, dir, fmt.Sprintf("len%d", n), func(c replicas, srv servers) error {
			grown := "grown-" + tag
			id := func(int) string { return grown }
			var done atomic.Int64
			if err := createSessions(ctx, c, 1, id, &done); err != nil {
				return err
			}
			stop := progress(w, fmt.Sprintf("growing a session to %d events", n), &done, n+1)
			err := growSession(ctx, c.of(0), "bench-user-0", grown, n, &done)
			stop()
			if err != nil {
				return err
			}
			res, err = measured(ctx, w, c, srv, loadSpec{name: fmt.Sprintf("session of %d events", n), sessions: 1, runs: o.LengthRuns, words: 8, streaming: "none", sessionID: id})
			res.SessionLen = n
			return err
		})
		if err != nil {
			return err
		}
		if o.Addr == "" && o.Data == "" {
			fs, err := inspectFile(filepath.Join(dir, fmt.Sprintf("len%d", n), "agentrunner.db"))
			if err != nil {
				return err
			}
			res.File = &fs
		}
		rep.Results = append(rep.Results, res)
	}
	return nil
}

// storedGroup runs sessions beside many stored ones, when asked.
func storedGroup(ctx context.Context, o Options, dir, tag string, w io.Writer, rep *Report) error {
	if o.StoredSessions <= 0 {
		return nil
	}
	var res Result
	err := withServer(ctx, o, dir, "stored", func(c replicas, srv servers) error {
		id := func(i int) string { return fmt.Sprintf("stored-%s-%d", tag, i) }
		var done atomic.Int64
		stop := progress(w, fmt.Sprintf("creating %d sessions", o.StoredSessions), &done, o.StoredSessions)
		err := createSessions(ctx, c, o.StoredSessions, id, &done)
		stop()
		if err != nil {
			return err
		}
		// 16 of the stored sessions run (all of them, when fewer are stored).
		n := min(16, o.StoredSessions)
		res, err = measured(ctx, w, c, srv, loadSpec{name: fmt.Sprintf("%d sessions of %d stored", n, o.StoredSessions), sessions: n, runs: o.Runs, words: 8, streaming: "mixed", sessionID: id})
		res.Stored = o.StoredSessions
		return err
	})
	if err != nil {
		return err
	}
	rep.Results = append(rep.Results, res)
	return nil
}

// measured runs one scenario with a progress line and the servers' CPU
// and memory read around it: CPU summed over the replicas, peak RSS the
// largest replica's.
func measured(ctx context.Context, w io.Writer, c runClients, srv servers, spec loadSpec) (Result, error) {
	cpu0, _ := srv.cpuSeconds()
	var done atomic.Int64
	stop := progress(w, spec.name, &done, spec.sessions*spec.runs)
	res, err := drive(ctx, c, spec, &done)
	stop()
	if err != nil {
		return res, err
	}
	if len(srv) > 0 {
		if cpu1, err := srv.cpuSeconds(); err == nil && res.Runs > 0 {
			res.ServerCPUPerRunMs = (cpu1 - cpu0) * 1000 / float64(res.Runs)
		}
		if hwm, err := srv.peakRSSKiB(); err == nil {
			res.PeakRSSMiB = float64(hwm) / 1024
		}
	}
	fmt.Fprintf(w, "%-40s %8.0f runs/s  p50 %6.2f ms\n", spec.name, res.RunsPerSec, res.LatencyMs.P50)
	if res.Failed > 0 {
		fmt.Fprintf(w, "%-40s %8d runs failed, the first: %s\n", "", res.Failed, res.FirstError)
	}
	return res, nil
}

// withServer runs fn against o.Addr, or against o.Replicas servers
// started for this group in dir/name (dir/name/rN for several) and
// stopped afterwards; the last Result fn appended gets the stopped
// server's file statistics through the caller.
func withServer(ctx context.Context, o Options, dir, name string, fn func(c replicas, srv servers) error) error {
	addrs := []string{o.Addr}
	var srv servers
	if o.Addr == "" {
		var err error
		srv, err = startServers(ctx, o, filepath.Join(dir, name))
		defer srv.kill()
		if err != nil {
			return err
		}
		addrs = srv.addrs()
	}
	c, closeConns, err := dialReplicas(addrs, o.App)
	if err != nil {
		return err
	}
	defer closeConns()
	if err := fn(c, srv); err != nil {
		if len(srv) > 0 {
			return fmt.Errorf("%w\nserver log:\n%s", err, srv.logTail(2000))
		}
		return err
	}
	return srv.stop()
}

// dialReplicas connects a client of app to each address; closeConns
// closes them.
func dialReplicas(addrs []string, app string) (c replicas, closeConns func(), err error) {
	var conns []*grpc.ClientConn
	closeConns = func() {
		for _, conn := range conns {
			conn.Close()
		}
	}
	for _, addr := range addrs {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			closeConns()
			return nil, nil, err
		}
		conns = append(conns, conn)
		c = append(c, newClient(conn, app))
	}
	return c, closeConns, nil
}

// startServers starts o.Replicas servers on o.Data, each in a directory of
// its own under dir (dir itself for one, where its bbolt file goes).
func startServers(ctx context.Context, o Options, dir string) (servers, error) {
	var srv servers
	for i := range max(o.Replicas, 1) {
		sdir, replica := dir, ""
		if o.Replicas > 1 {
			sdir, replica = filepath.Join(dir, fmt.Sprintf("r%d", i)), fmt.Sprintf("bench-r%d", i)
		}
		if err := os.MkdirAll(sdir, 0o755); err != nil {
			return srv, err
		}
		p, err := startServer(ctx, o.Binary, sdir, o.App, o.Data, replica, o.Priced)
		if err != nil {
			return srv, err
		}
		srv = append(srv, p)
	}
	return srv, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// samplePartial is a partial event as the Run stream carries it, for the
// stream limit: the same message size as the scenario's partials.
func samplePartial() *servicev1.RunResponse {
	return &servicev1.RunResponse{Payload: &servicev1.RunResponse_Event{Event: &agentrunnerv1.Event{
		Id: "8f14e45fceea167a5a36dedd4bea2543", InvocationId: "e-c9f0f895fb98ab9159f51fd0297e236d",
		Author: "answer", Timestamp: timestamppb.Now(), Partial: true,
		Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "w123 "}}}},
	}}}
}
