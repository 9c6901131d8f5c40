package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fakePeerEnv makes the test binary a fake adk-go peer (fakePeerMain);
// fakePeerFailEnv, when set to n, makes every n-th run it serves fail.
const (
	fakePeerEnv     = "AGENTRUNNER_BENCH_FAKE_PEER"
	fakePeerFailEnv = "AGENTRUNNER_BENCH_FAKE_PEER_FAIL_EVERY"
)

// fakeREST serves the part of adk-go's REST API the bench drives: session
// creation, /run (a JSON array of one event) and /run_sse (two partial
// events and the whole one), failing every failEvery-th run (never when
// zero): /run with a 500, /run_sse with an SSE error event, as adk-go
// reports a failure once the stream has started.
func fakeREST(failEvery int64) http.Handler {
	var runs atomic.Int64
	fail := func() bool { n := runs.Add(1); return failEvery > 0 && n%failEvery == 0 }
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/apps/{app}/users/{user}/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"id":%q,"events":[]}`, r.PathValue("id"))
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("POST /api/run", func(w http.ResponseWriter, r *http.Request) {
		if fail() {
			http.Error(w, `{"error":"failed to run agent: boom"}`, http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, `[{"author":"bench","content":{"role":"model","parts":[{"text":"offline model: you said: hi"}]},"turnComplete":true}]`)
	})
	mux.HandleFunc("POST /api/run_sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"partial\":true}\n\ndata: {\"partial\":true}\n\n")
		if fail() {
			fmt.Fprint(w, "event: error\ndata: {\"error\":\"boom\"}\n\n")
			return
		}
		fmt.Fprint(w, "data: {\"turnComplete\":true}\n\n")
	})
	return mux
}

// fakePeerMain serves fakeREST as the peer binary does: on the --addr
// it is given, printing the ready line, until SIGTERM.
func fakePeerMain() int {
	addr := "127.0.0.1:0"
	for i, a := range os.Args {
		if a == "--addr" && i+1 < len(os.Args) {
			addr = os.Args[i+1]
		}
	}
	failEvery, _ := strconv.ParseInt(os.Getenv(fakePeerFailEnv), 10, 64)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: fakeREST(failEvery)}
	go srv.Serve(l)
	fmt.Printf("some log line first\n%shttp://%s\n", peerReady, l.Addr())
	<-ctx.Done()
	_ = srv.Close()
	return 0
}

// TestRESTClientRun counts what each endpoint returns as agentrunner's
// Run stream is counted, and reports each kind of failure.
func TestRESTClientRun(t *testing.T) {
	srv := httptest.NewServer(fakeREST(2)) // runs 2, 4, … fail
	defer srv.Close()
	c := newRESTClient(srv.URL, "bench")
	defer c.close()
	if err := c.createSession(t.Context(), "u", "s"); err != nil {
		t.Fatalf("create: %v", err)
	}
	st, err := c.run(t.Context(), "u", "s", "hi", false)
	if err != nil || st.msgs != 1 || st.p != 0 || st.persisted != 2 {
		t.Errorf("/run: %+v, %v; want 1 message, 2 persisted (the user event too)", st, err)
	}
	if _, err := c.run(t.Context(), "u", "s", "hi", false); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("failing /run: %v, want the 500", err)
	}
	st, err = c.run(t.Context(), "u", "s", "hi", true)
	if err != nil || st.msgs != 3 || st.p != 2 || st.persisted != 2 {
		t.Errorf("/run_sse: %+v, %v; want 3 messages, 2 partial, 2 persisted", st, err)
	}
	if _, err := c.run(t.Context(), "u", "s", "hi", true); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("failing /run_sse: %v, want the error event's message", err)
	}
}

// TestReadyWriter finds the ready line however the output is cut.
func TestReadyWriter(t *testing.T) {
	out := "starting\n" + peerReady + "http://127.0.0.1:9\nlater\n"
	for cut := range len(out) {
		rw := &readyWriter{buf: &logBuffer{}, url: make(chan string, 1)}
		io.WriteString(rw, out[:cut])
		io.WriteString(rw, out[cut:])
		select {
		case u := <-rw.url:
			if u != "http://127.0.0.1:9" {
				t.Fatalf("cut at %d: url %q", cut, u)
			}
		default:
			t.Fatalf("cut at %d: no url", cut)
		}
	}
}

// flaky fails every n-th run.
type flaky struct {
	n    int64
	runs atomic.Int64
}

func (f *flaky) runner(int) runClient { return f }

func (f *flaky) run(context.Context, string, string, string, bool) (runStats, error) {
	if f.runs.Add(1)%f.n == 0 {
		return runStats{}, errors.New("boom")
	}
	return runStats{msgs: 1, persisted: 2}, nil
}

// TestDriveTolerate: a tolerant scenario counts failed runs and goes on;
// a plain one stops at the first.
func TestDriveTolerate(t *testing.T) {
	spec := loadSpec{name: "x", sessions: 4, runs: 6, streaming: "mixed", sessionID: strconv.Itoa, tolerate: true}
	var done atomic.Int64
	res, err := drive(t.Context(), &flaky{n: 3}, spec, &done)
	if err != nil || res.Failed != 8 || res.Runs != 16 || !strings.Contains(res.FirstError, "boom") {
		t.Errorf("tolerant: %+v, %v; want 8 failed and 16 runs of 24", res, err)
	}
	spec.tolerate = false
	if _, err := drive(t.Context(), &flaky{n: 3}, spec, &done); err == nil {
		t.Error("plain scenario with failing runs: no error")
	}
}

// TestPeer runs the side-by-side against agentrunner and a fake peer (this
// test binary): every side and scenario gets a figure per round; failed
// runs of the peer are counted and make Peer fail, naming the side.
func TestPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "agentrunner")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentrunner/agentrunner/cmd/agentrunner").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakePeerEnv, "1")
	o := Options{Binary: bin, App: "bench", Concurrency: []int{4}, Runs: 3, SingleRuns: 5,
		Inflight: 8, InflightRuns: 2, InflightFirst: 20 * time.Millisecond, InflightGap: 5 * time.Millisecond}
	var progress strings.Builder
	pc, err := Peer(t.Context(), o, self, 2, &progress)
	if err != nil {
		t.Fatalf("peer: %v\n%s", err, progress.String())
	}
	checkInflight(t, pc.InFlight)
	if len(pc.Scenarios) != 2 {
		t.Fatalf("%d scenarios, want 2", len(pc.Scenarios))
	}
	for _, s := range pc.Scenarios {
		for _, side := range peerSides {
			if r := s.RunsPerSec[side]; len(r) != 2 || r[0] <= 0 || r[1] <= 0 {
				t.Errorf("%s, %s: runs/s %v, want 2 positive", s.Name, side, r)
			}
		}
		if s.Ratio[sidePeerMem] <= 0 || s.Ratio[sidePeerLite] <= 0 {
			t.Errorf("%s: ratios %v", s.Name, s.Ratio)
		}
	}
	t.Setenv(fakePeerFailEnv, "4")
	pc, err = Peer(t.Context(), o, self, 1, &progress)
	if err == nil || !strings.Contains(err.Error(), sidePeerMem) || !strings.Contains(err.Error(), sidePeerLite) {
		t.Fatalf("failing peer: %v, want an error naming both peer sides", err)
	}
	var table strings.Builder
	printPeer(&table, pc)
	if s := pc.Scenarios[1]; s.Failed[sideOurs] != 0 || s.Failed[sidePeerMem] != 3 {
		t.Errorf("failed runs %v, want none of agentrunner's and 3 of 12 of the peer's", s.Failed)
	}
	if !strings.Contains(table.String(), "0 / 3 / 3") {
		t.Errorf("table does not show the failed runs:\n%s", table.String())
	}
}

// TestLogBufferKeepsTail: a child's output is kept to its tail, however
// long the child runs, and the newest bytes are always there.
func TestLogBufferKeepsTail(t *testing.T) {
	var b logBuffer
	line := strings.Repeat("x", 1023) + "\n"
	for i := range 5 * logKeep / len(line) {
		if n, err := b.Write([]byte(line)); n != len(line) || err != nil {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
	}
	if _, err := b.Write([]byte("last line\n")); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if len(got) < logKeep || len(got) > 2*logKeep || !strings.HasSuffix(got, "x\nlast line\n") {
		t.Fatalf("kept %d bytes ending %q; want between %d and %d ending with the last line", len(got), got[max(0, len(got)-20):], logKeep, 2*logKeep)
	}
}

// checkInflight: two rounds of the runs-in-flight scenario, each side in
// turn, with every run and chunk counted (8 sessions × 2 runs: 8 chunks
// a run on agentrunner's paced model, 2 on the fake peer's) and the
// servers read.
func checkInflight(t *testing.T, rs []InflightResult) {
	t.Helper()
	if len(rs) != 4 {
		t.Fatalf("%d runs-in-flight results, want 4: %+v", len(rs), rs)
	}
	for i, r := range rs {
		side, chunks := sideOurs, 16*inflightChunks
		if i%2 == 1 {
			side, chunks = sidePeerMem, 16*2
		}
		if r.Side != side || r.Runs != 16 || r.Failed != 0 || r.Chunks != chunks || r.GoroutinesIdle <= 0 || r.RSSIdleMiB <= 0 || r.CPUPerChunkUs < 0 {
			t.Errorf("result %d: %+v; want %s, 16 runs, %d chunks, goroutines and memory read", i, r, side, chunks)
		}
	}
	var table strings.Builder
	printPeerInflight(&table, rs)
	if !strings.Contains(table.String(), "runs in flight: 8 sessions") || !strings.Contains(table.String(), "RSS a run") {
		t.Errorf("table:\n%s", table.String())
	}
}

// TestPeerOnPostgres: with a postgres:// --data, the side-by-side has
// agentrunner and adk-go's database service on that database, and the
// table has their columns and failed runs.
func TestPeerOnPostgres(t *testing.T) {
	if got := sidesFor(Options{Data: "postgres://u@127.0.0.1:5432/db"}); !slices.Equal(got, []string{sideOurs, sidePeerPG}) {
		t.Fatalf("sides on PostgreSQL: %v", got)
	}
	if got := sidesFor(Options{}); !slices.Equal(got, peerSides) {
		t.Fatalf("sides on bbolt: %v", got)
	}
	pc := &PeerComparison{Peer: "adkpeer", Rounds: 1, Store: "postgres", Sides: pgPeerSides}
	pc.add(sideOurs, Result{Name: "256 sessions, mixed", RunsPerSec: 700, ServerCPUPerRunMs: 0.7})
	pc.add(sidePeerPG, Result{Name: "256 sessions, mixed", RunsPerSec: 200, ServerCPUPerRunMs: 2.5, Failed: 2, FirstError: "boom"})
	pc.Scenarios[0].finish(pc.Sides)
	if r := pc.Scenarios[0].Ratio[sidePeerPG]; r != 3.5 {
		t.Errorf("ratio %v, want 3.5", r)
	}
	if err := pc.failures(); err == nil || !strings.Contains(err.Error(), sidePeerPG) {
		t.Errorf("failures: %v, want one naming %q", err, sidePeerPG)
	}
	var table strings.Builder
	printPeer(&table, pc)
	for _, want := range []string{"postgres\n", "adk-go postgres r/s", "3.50", "0.70", "2.50", "0 / 2"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}
