package bench

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// The sides of a side-by-side with the adk-go peer (examples/peer/adkgo):
// agentrunner's own server, and the peer on each of adk-go's session
// services.
const (
	sideOurs      = "agentrunner"
	sidePeerMem   = "adk-go memory"
	sidePeerLite  = "adk-go sqlite"
	sidePeerPG    = "adk-go postgres"
	peerModuleADK = "google.golang.org/adk"
)

// peerSides are the sides of a side-by-side on bbolt; pgPeerSides those
// on a --data PostgreSQL database, which both sides share.
var (
	peerSides   = []string{sideOurs, sidePeerMem, sidePeerLite}
	pgPeerSides = []string{sideOurs, sidePeerPG}
)

// sidesFor returns the sides of a side-by-side with options o.
func sidesFor(o Options) []string {
	if isPostgresURL(o.Data) {
		return pgPeerSides
	}
	return peerSides
}

// peerStores are the peer's --sessions value for each of its sides.
var peerStores = map[string]string{sidePeerMem: "memory", sidePeerLite: "sqlite", sidePeerPG: "postgres"}

// peerColumns are the sides' names in the table's headers.
var peerColumns = map[string]string{sideOurs: "agentrunner", sidePeerMem: "adk-go mem", sidePeerLite: "adk-go sqlite", sidePeerPG: "adk-go postgres"}

// PeerComparison is what `bench --peer BINARY` measures: the same
// workloads on agentrunner and on adk-go's REST API (in memory and on
// SQLite; with a --data PostgreSQL, agentrunner and adk-go's database
// service both on it), in rounds that alternate the sides, so that a
// slow spell of a shared machine weighs on all of them. A scenario's ratios are medians
// of the rounds' ratios, agentrunner's runs/s over the peer's.
type PeerComparison struct {
	Peer       string         `json:"peer"`
	ADKVersion string         `json:"adk_version"` // from the peer's build info
	Rounds     int            `json:"rounds"`
	Store      string         `json:"store"`          // "bbolt" (agentrunner's; adk-go in memory and SQLite) or "postgres" (both)
	Sides      []string       `json:"sides"`          // agentrunner first
	LoadBefore string         `json:"loadavg_before"` // /proc/loadavg
	LoadAfter  string         `json:"loadavg_after"`
	Scenarios  []PeerScenario `json:"scenarios"`
	// InFlight is the runs-in-flight scenario on agentrunner and on the
	// peer in memory, each round's result of each side in turn.
	InFlight []InflightResult `json:"in_flight,omitempty"`
}

// PeerScenario holds one scenario's figures per side, one per round.
type PeerScenario struct {
	Name       string               `json:"name"`
	RunsPerSec map[string][]float64 `json:"runs_per_sec"`
	CPUMs      map[string][]float64 `json:"server_cpu_ms_per_run"`
	Failed     map[string]int       `json:"failed_runs"`
	FirstError map[string]string    `json:"first_error,omitempty"`
	// Ratio is, per peer side, the median over the rounds of
	// agentrunner's runs/s over that side's: above 1, agentrunner is faster.
	Ratio map[string]float64 `json:"ratio"`
}

// peerSpecs are the workloads of a side-by-side: one session's sequential
// runs, unstreamed, and each --sessions count of concurrent sessions with
// half of the runs streamed, as `bench` runs them. Failures are counted.
func peerSpecs(o Options) []loadSpec {
	if len(o.Only) > 0 && !slices.Contains(o.Only, "load") {
		return nil
	}
	specs := []loadSpec{{name: "single session, no streaming", sessions: 1, runs: o.SingleRuns, words: 8, streaming: "none", tolerate: true}}
	for _, n := range o.Concurrency {
		specs = append(specs, loadSpec{name: fmt.Sprintf("%d sessions, mixed", n), sessions: n, runs: o.Runs, words: 8, streaming: "mixed", tolerate: true})
	}
	return specs
}

// Peer runs the side-by-side; progress goes to w. It returns the
// comparison, and an error too when any run failed on any side, so that
// a smoke test fails then (the comparison is still printed).
func Peer(ctx context.Context, o Options, peer string, rounds int, w io.Writer) (*PeerComparison, error) {
	switch {
	case o.Addr != "":
		return nil, errors.New("--peer with --addr: the side-by-side starts both servers itself")
	case rounds < 1:
		return nil, fmt.Errorf("--rounds %d: must be at least 1", rounds)
	}
	abs, err := filepath.Abs(peer)
	if err != nil {
		return nil, err
	}
	pc := &PeerComparison{Peer: peer, ADKVersion: peerADKVersion(abs), Rounds: rounds, LoadBefore: loadAvg(),
		Store: "bbolt", Sides: sidesFor(o)}
	if isPostgresURL(o.Data) {
		pc.Store = "postgres"
	}
	dir := o.DataDir
	if dir == "" {
		d, err := os.MkdirTemp("", "agentrunner-peer-*")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	started := time.Now().UnixNano()
	for r := range rounds {
		for _, side := range pc.Sides {
			fmt.Fprintf(w, "round %d of %d: %s\n", r+1, rounds, side)
			// Session ids differ per round and side: a peer's SQLite file
			// or our bbolt file is new each time, but ids never repeat
			// (nor on a shared PostgreSQL database).
			tag := strconv.FormatInt(started, 36) + fmt.Sprintf("-r%d-%d", r, slices.Index(pc.Sides, side))
			sdir := filepath.Join(dir, fmt.Sprintf("r%d-%s", r, strings.ReplaceAll(side, " ", "-")))
			results, err := peerRound(ctx, o, abs, side, sdir, tag, w)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", r+1, side, err)
			}
			for _, res := range results {
				pc.add(side, res)
			}
		}
		if err := pc.inflightRound(ctx, o, abs, dir, fmt.Sprintf("%s-r%d", strconv.FormatInt(started, 36), r), w); err != nil {
			return nil, fmt.Errorf("round %d, runs in flight: %w", r+1, err)
		}
	}
	pc.LoadAfter = loadAvg()
	for i := range pc.Scenarios {
		pc.Scenarios[i].finish(pc.Sides)
	}
	return pc, pc.failures()
}

// inflightRound runs the runs-in-flight scenario, when asked, on a new
// agentrunner server and then on a new peer in memory (adk-go on SQLite
// cannot hold thousands of runs' writes on one connection).
func (pc *PeerComparison) inflightRound(ctx context.Context, o Options, peer, dir, tag string, w io.Writer) error {
	if o.Inflight <= 0 || (len(o.Only) > 0 && !slices.Contains(o.Only, "inflight")) {
		return nil
	}
	fmt.Fprintf(w, "runs in flight: %s\n", sideOurs)
	res, err := inflightOurs(ctx, o, filepath.Join(dir, tag+"-inflight-ours"), tag+"-o", w)
	if err != nil {
		return err
	}
	pc.InFlight = append(pc.InFlight, res)
	fmt.Fprintf(w, "runs in flight: %s\n", sidePeerMem)
	if res, err = inflightPeer(ctx, o, peer, filepath.Join(dir, tag+"-inflight-peer"), tag+"-p", w); err != nil {
		return err
	}
	pc.InFlight = append(pc.InFlight, res)
	return nil
}

// inflightPeer runs the runs-in-flight scenario on a new peer in memory,
// its model paced as agentrunner's.
func inflightPeer(ctx context.Context, o Options, peer, dir, tag string, w io.Writer) (InflightResult, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return InflightResult{}, err
	}
	p, err := startPeer(ctx, peer, "memory", dir, "", o.App, "--first-chunk-delay", o.InflightFirst.String(),
		"--chunk-delay", o.InflightGap.String(), "--chunks", strconv.Itoa(inflightChunks))
	if err != nil {
		return InflightResult{}, err
	}
	defer p.kill()
	c := newRESTClient(p.addr, o.App)
	defer c.close()
	// One connection per open run (HTTP/1.1), kept between its session's runs.
	c.http.Transport.(*http.Transport).MaxIdleConnsPerHost = max(1024, o.Inflight)
	spec := o.inflightSpec(tag)
	err = parallel(ctx, spec.sessions, 64, func(ctx context.Context, i int) error {
		return c.createSession(ctx, fmt.Sprintf("bench-user-%d", i%64), spec.id(i))
	})
	if err != nil {
		return InflightResult{}, fmt.Errorf("create sessions: %w\npeer log:\n%s", err, tail(p.logs.String(), 2000))
	}
	res, err := driveInflight(ctx, c, probe{srv: p, http: &http.Client{Timeout: 30 * time.Second}}, spec, w)
	res.Side = sidePeerMem
	if err != nil {
		return res, fmt.Errorf("%w\npeer log:\n%s", err, tail(p.logs.String(), 2000))
	}
	printInflightLine(w, res)
	return res, p.stop()
}

// peerRound runs every workload on a fresh server of one side, in dir.
func peerRound(ctx context.Context, o Options, peer, side, dir, tag string, w io.Writer) ([]Result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	specs := peerSpecs(o)
	for si := range specs {
		specs[si].sessionID = func(i int) string { return fmt.Sprintf("peer-%s-%d-%d", tag, si, i) }
	}
	if side == sideOurs {
		var out []Result
		o.Replicas, o.Priced = 1, false
		if !isPostgresURL(o.Data) {
			o.Data = ""
		}
		err := withServer(ctx, o, filepath.Dir(dir), filepath.Base(dir), func(c replicas, srv servers) error {
			var err error
			out, err = runSpecs(ctx, w, c, srv, specs, func(ctx context.Context, s loadSpec) error {
				var done atomic.Int64
				return createSessions(ctx, c, s.sessions, s.sessionID, &done)
			})
			return err
		})
		return out, err
	}
	dsn := ""
	if side == sidePeerPG {
		dsn = o.Data
	}
	p, err := startPeer(ctx, peer, peerStores[side], dir, dsn, o.App)
	if err != nil {
		return nil, err
	}
	defer p.kill()
	c := newRESTClient(p.addr, o.App)
	defer c.close()
	out, err := runSpecs(ctx, w, c, servers{p}, specs, func(ctx context.Context, s loadSpec) error {
		return parallel(ctx, s.sessions, 64, func(ctx context.Context, i int) error {
			return c.createSession(ctx, fmt.Sprintf("bench-user-%d", i%64), s.sessionID(i))
		})
	})
	if err != nil {
		return nil, fmt.Errorf("%w\npeer log:\n%s", err, tail(p.logs.String(), 2000))
	}
	return out, p.stop()
}

// runSpecs creates each spec's sessions with create, then measures it.
func runSpecs(ctx context.Context, w io.Writer, c runClients, srv servers, specs []loadSpec, create func(context.Context, loadSpec) error) ([]Result, error) {
	var out []Result
	for _, s := range specs {
		if err := create(ctx, s); err != nil {
			return nil, fmt.Errorf("%s: create sessions: %w", s.name, err)
		}
		res, err := measured(ctx, w, c, srv, s)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// add records one side's result of a scenario in one round.
func (pc *PeerComparison) add(side string, res Result) {
	i := slices.IndexFunc(pc.Scenarios, func(s PeerScenario) bool { return s.Name == res.Name })
	if i < 0 {
		pc.Scenarios = append(pc.Scenarios, PeerScenario{Name: res.Name, RunsPerSec: map[string][]float64{},
			CPUMs: map[string][]float64{}, Failed: map[string]int{}, FirstError: map[string]string{}, Ratio: map[string]float64{}})
		i = len(pc.Scenarios) - 1
	}
	s := &pc.Scenarios[i]
	s.RunsPerSec[side] = append(s.RunsPerSec[side], res.RunsPerSec)
	s.CPUMs[side] = append(s.CPUMs[side], res.ServerCPUPerRunMs)
	s.Failed[side] += res.Failed
	if res.FirstError != "" && s.FirstError[side] == "" {
		s.FirstError[side] = res.FirstError
	}
}

func (s *PeerScenario) finish(sides []string) {
	for _, side := range sides[1:] {
		s.Ratio[side] = medianRatio(s.RunsPerSec[sideOurs], s.RunsPerSec[side])
	}
}

// failures is an error naming every side and scenario with failed runs.
func (pc *PeerComparison) failures() error {
	var errs []error
	for _, r := range pc.InFlight {
		if r.Failed > 0 {
			errs = append(errs, fmt.Errorf("runs in flight, %s: %d runs failed, first: %s", r.Side, r.Failed, r.FirstError))
		}
	}
	for _, s := range pc.Scenarios {
		for _, side := range pc.Sides {
			if n := s.Failed[side]; n > 0 {
				errs = append(errs, fmt.Errorf("%s, %s: %d runs failed, first: %s", s.Name, side, n, s.FirstError[side]))
			}
		}
	}
	return errors.Join(errs...)
}

// peerADKVersion is the adk-go version the peer binary was built with,
// from its build info; "unknown" when it cannot be read.
func peerADKVersion(binary string) string {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == peerModuleADK {
			return d.Version
		}
	}
	return "unknown"
}

// loadAvg is the first three fields of /proc/loadavg, for the record: the
// bench's machine may be shared.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// printPeer writes the side-by-side as one table: medians of each side's
// figures, the medians of the rounds' ratios, and failed runs.
func printPeer(w io.Writer, pc *PeerComparison) {
	fmt.Fprintf(w, "peer %s (adk-go %s, REST API: JSON over HTTP/1.1); agentrunner: gRPC (protobuf over HTTP/2), %s\n", pc.Peer, pc.ADKVersion, pc.Store)
	fmt.Fprintf(w, "%d rounds alternating %s; figures are medians; ratio = agentrunner runs/s ÷ adk-go runs/s (median of the rounds' ratios; above 1, agentrunner is faster)\n", pc.Rounds, strings.Join(pc.Sides, ", "))
	fmt.Fprintf(w, "load average before %s, after %s\n", pc.LoadBefore, pc.LoadAfter)
	if len(pc.Scenarios) > 0 {
		printPeerScenarios(w, pc)
	}
	printPeerInflight(w, pc.InFlight)
}

// printPeerScenarios writes the load scenarios' rows of a side-by-side,
// a pair of columns for each of its sides.
func printPeerScenarios(w io.Writer, pc *PeerComparison) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"scenario", "agentrunner r/s"}
	for _, side := range pc.Sides[1:] {
		head = append(head, peerColumns[side]+" r/s", "ratio")
	}
	for i, side := range pc.Sides {
		if i == 0 {
			head = append(head, "cpu ms/run: "+peerColumns[side])
		} else {
			head = append(head, peerColumns[side])
		}
	}
	fmt.Fprintln(tw, strings.Join(append(head, "failed runs"), "\t")+"\t")
	for _, s := range pc.Scenarios {
		row := []string{s.Name, fmt.Sprintf("%.0f", median(s.RunsPerSec[sideOurs]))}
		for _, side := range pc.Sides[1:] {
			row = append(row, fmt.Sprintf("%.0f", median(s.RunsPerSec[side])), fmt.Sprintf("%.2f", s.Ratio[side]))
		}
		var failed []string
		for _, side := range pc.Sides {
			row = append(row, fmt.Sprintf("%.2f", median(s.CPUMs[side])))
			failed = append(failed, strconv.Itoa(s.Failed[side]))
		}
		fmt.Fprintln(tw, strings.Join(append(row, strings.Join(failed, " / ")), "\t")+"\t")
	}
	tw.Flush()
}
