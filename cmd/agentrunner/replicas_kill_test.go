package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// envSeed, when set, replaces the random seed of TestThreeReplicasKill9
// (it logs the one it used), to replay a failure's replica choices.
const envSeed = "AGENTRUNNER_TEST_SEED"

// slowGemini is a fake Gemini API that answers every generateContent
// call with a short text after delay (less if the caller goes away): a
// model slow enough that runs are in flight when a replica is killed.
func slowGemini(t *testing.T, delay time.Duration) *httptest.Server {
	answer, err := json.Marshal(map[string]any{"candidates": []any{map[string]any{
		"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"text": "a slow answer"}}},
		"finishReason": "STOP",
	}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		timer := time.NewTimer(delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, ":generateContent"):
			w.Header().Set("Content-Type", "application/json")
			w.Write(answer)
		case strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\r\n\r\n", answer)
		default:
			http.Error(w, `{"error":{"code":404,"message":"fake: no such method","status":"NOT_FOUND"}}`, http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// slowConfig is an app whose run is the user's message and two model
// answers (a sequential agent of two LLM agents), each model call taking
// the fake model's delay.
const slowConfig = `models:
  - name: g
    provider: gemini
    model: gemini-fake
    base_url: %s
    api_key_env: AGENTRUNNER_TEST_GEMINI_KEY
    retry: { max_attempts: 1 }
apps:
  - name: slow
    root_agent:
      name: pipeline
      sequential: {}
      sub_agents:
        - { name: first, llm: { model: g } }
        - { name: second, llm: { model: g } }
`

// replica is one serve process of the kill test.
type replica struct {
	name   string
	p      *proc
	rc     servicev1.RunnerServiceClient
	sc     servicev1.SessionServiceClient
	killed atomic.Bool // set just before its SIGKILL
}

// killHarness is the shared state of TestThreeReplicasKill9's sessions.
type killHarness struct {
	t        *testing.T
	replicas []*replica
	victim   *replica

	mu       sync.Mutex
	ended    int // runs that ended (any replica)
	inflight int // runs on the victim that started and have not ended
	ready    chan struct{}
	readyOK  bool // ready was closed
	refused  atomic.Int64
	killedAt atomic.Int64 // unix nanoseconds
}

// runResult is what a client saw of one Run or ResumeRun stream.
type runResult struct {
	first, last *agentrunnerv1.Run
	acked       []*agentrunnerv1.Event // complete events received
	err         error
}

// sessionLog is what one session's client did, for the checks.
type sessionLog struct {
	id    string
	execs []string               // run ids in the order their executions started
	acked []*agentrunnerv1.Event // every complete event received for the session
	cut   []string               // runs the kill cut off, resumed since
	split map[string]bool        // cut runs a later run overtook before their resume
}

// TestThreeReplicasKill9 is issue 17's end-to-end check of replicas on
// one PostgreSQL database: three serve processes with 2 s leases, 64
// sessions each making several sequential runs, every run sent to a
// random replica, and one replica killed with SIGKILL while runs are in
// flight on it. Afterwards no acknowledged event is lost, no session's
// runs interleave, the dead replica's cut-off runs are marked INTERRUPTED
// by the survivors once its leases expire and complete when resumed on a
// survivor, and every other run succeeded (a run refused ABORTED because
// the dead replica still held its session is retried after recovery).
func TestThreeReplicasKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envSeed); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", envSeed, s, err)
		}
	}
	t.Logf("seed %d (%s=%d replays the replica choices)", seed, envSeed, seed)
	h := startKillReplicas(t, rand.New(rand.NewPCG(seed, 0)))

	const sessions, runsPerSession = 64, 5
	logs := make([]*sessionLog, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		logs[i] = &sessionLog{id: fmt.Sprintf("s%d", i), split: map[string]bool{}}
		createSession(t, h.replicas[i%3].sc, "slow", logs[i].id)
		srng := rand.New(rand.NewPCG(seed, uint64(i)+1))
		wg.Go(func() { h.session(logs[i], srng, runsPerSession) })
	}

	// Kill the victim once runs have ended everywhere and several are in
	// flight on it.
	select {
	case <-h.ready:
	case <-time.After(30 * time.Second):
		t.Errorf("the kill condition was never met in 30s")
	}
	h.mu.Lock()
	inflight := h.inflight
	h.victim.killed.Store(true)
	h.mu.Unlock()
	killedAt := time.Now()
	h.killedAt.Store(killedAt.UnixNano())
	if err := h.victim.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-h.victim.p.exited
	t.Logf("killed %s with %d runs in flight on it", h.victim.name, inflight)
	wg.Wait()
	t.Logf("all sessions done %v after the kill; %d runs refused ABORTED while the dead replica held their session", time.Since(killedAt).Round(time.Millisecond), h.refused.Load())
	if t.Failed() {
		h.dumpLogs()
		return
	}

	var cut int
	for _, l := range logs {
		h.checkSession(l, runsPerSession)
		cut += len(l.cut)
	}
	if cut == 0 {
		t.Errorf("the kill cut no run off; nothing was checked about recovery")
	}
	t.Logf("%d runs cut off by the kill were interrupted and resumed", cut)
	if t.Failed() {
		h.dumpLogs()
	}
}

// startKillReplicas builds the binary and starts three replicas of it on
// a new database, serving the slow app with 2 s leases; rng picks the
// one to kill.
func startKillReplicas(t *testing.T, rng *rand.Rand) *killHarness {
	t.Helper()
	url := pg.URL(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentrunner")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	model := slowGemini(t, 80*time.Millisecond)
	t.Setenv("AGENTRUNNER_TEST_GEMINI_KEY", "fake-key")
	config := writeFile(t, filepath.Join(dir, "apps.yaml"), fmt.Sprintf(slowConfig, model.URL))
	h := &killHarness{t: t, ready: make(chan struct{})}
	for i := range 3 {
		name := fmt.Sprintf("r%d", i)
		p := startBinary(t, bin, "--addr", "127.0.0.1:0", "--data", url, "--config", config,
			"--lease-ttl", "2s", "--replica", name)
		conn := dial(t, p.addr)
		h.replicas = append(h.replicas, &replica{name: name, p: p, rc: servicev1.NewRunnerServiceClient(conn), sc: servicev1.NewSessionServiceClient(conn)})
	}
	h.victim = h.replicas[rng.IntN(3)]
	return h
}

// live returns a random replica that is not killed.
func (h *killHarness) live(rng *rand.Rand) *replica {
	for {
		if r := h.replicas[rng.IntN(len(h.replicas))]; !r.killed.Load() {
			return r
		}
	}
}

// note updates the kill condition: at least 64 runs ended and 4 in
// flight on the victim.
func (h *killHarness) note(onVictim bool, started, ended int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended += ended
	if onVictim {
		h.inflight += started - ended
	}
	if !h.readyOK && h.ended >= 64 && h.inflight >= 4 {
		h.readyOK = true
		close(h.ready)
	}
}

// session makes n runs on session l.id, each on a random replica, and
// recovers those the kill cuts off.
func (h *killHarness) session(l *sessionLog, rng *rand.Rand, n int) {
	t := h.t
	sent := 0
	next := func() *servicev1.RunRequest {
		sent++
		return &servicev1.RunRequest{AppName: "slow", UserId: "u", SessionId: l.id,
			NewMessage: userText(fmt.Sprintf("%s message %d", l.id, sent)), RequestId: fmt.Sprintf("%s-%d", l.id, sent)}
	}
	for done := 0; done < n; {
		if sent > n+40 {
			t.Errorf("%s: %d runs done after %d sent", l.id, done, sent)
			return
		}
		rep := h.live(rng)
		req := next()
		res := h.run(l, rep, req)
		switch {
		case res.err == nil:
			if st := res.last.GetStatus(); st != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
				t.Errorf("%s: run %s on %s ended %v (%v)", l.id, res.last.GetRunId(), rep.name, st, res.last.GetError())
				return
			}
			done++
		case rep.killed.Load():
			// Cut off by the kill. First, while the dead replica's lease
			// is fresh, a survivor refuses the session's next run.
			if done+1 < n {
				probe := h.run(l, h.live(rng), next())
				switch {
				case status.Code(probe.err) == codes.Aborted:
					if !h.refusal(l, probe.err) {
						return
					}
				case probe.err == nil && probe.last.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED:
					// The lease had already expired (a slow machine):
					// allowed, and then the cut run resumes after it.
					t.Logf("%s: a run ran on a survivor %v after the kill, before the cut run (%d events acknowledged) was recovered",
						l.id, time.Since(time.Unix(0, h.killedAt.Load())).Round(time.Millisecond), len(res.acked))
					l.split[req.GetRequestId()] = true
					done++
				default:
					t.Errorf("%s: run after the kill: %v, %v; want ABORTED or SUCCEEDED", l.id, probe.last, probe.err)
					return
				}
			}
			stored, ok := h.recoverCut(l, rng, req.GetRequestId(), res.first.GetRunId())
			if !ok {
				return
			}
			if stored {
				done++
			} // else nothing of it was stored: the next turn sends another
		case status.Code(res.err) == codes.Aborted:
			// The session is still the dead replica's: wait for the
			// survivors to recover it, then send another run.
			if !h.refusal(l, res.err) {
				return
			}
			if _, ok := h.waitSettled(l, rng); !ok {
				return
			}
			time.Sleep(250 * time.Millisecond) // polling for the dead replica's lease to expire
		default:
			t.Errorf("%s: run on %s: %v", l.id, rep.name, res.err)
			return
		}
	}
}

// refusal checks an ABORTED run: only once the victim is killed, and
// naming the session's lease holder, the dead replica (or a survivor
// recovering the session that moment).
func (h *killHarness) refusal(l *sessionLog, err error) bool {
	msg := status.Convert(err).Message()
	switch {
	case !h.victim.killed.Load():
		h.t.Errorf("%s: a run was refused before any replica died: %v", l.id, err)
		return false
	case !strings.Contains(msg, "leased to") || !strings.Contains(msg, "@"+h.victim.name+" ") && !strings.Contains(msg, "recover@"):
		h.t.Errorf("%s: refused with %q; want it to name the dead replica %s as the session's holder", l.id, msg, h.victim.name)
		return false
	}
	h.refused.Add(1)
	return true
}

// run sends req to rep and reads the stream to its end.
func (h *killHarness) run(l *sessionLog, rep *replica, req *servicev1.RunRequest) runResult {
	onVictim := rep == h.victim
	stream, err := rep.rc.Run(context.Background(), req)
	if err != nil {
		return runResult{err: err}
	}
	res := h.read(l, stream.Recv, func() { h.note(onVictim, 1, 0) })
	if res.first != nil {
		h.note(onVictim, 0, 1)
	}
	return res
}

// read collects a run stream, calling started at its first record.
func (h *killHarness) read(l *sessionLog, recv func() (*servicev1.RunResponse, error), started func()) runResult {
	var res runResult
	for {
		resp, err := recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			res.err = err
			break
		}
		switch {
		case resp.GetRun() != nil:
			if res.first == nil {
				res.first = resp.GetRun()
				l.execs = append(l.execs, res.first.GetRunId())
				started()
			}
			res.last = resp.GetRun()
		case resp.GetEvent() != nil && !resp.GetEvent().GetPartial():
			res.acked = append(res.acked, resp.GetEvent())
		}
	}
	l.acked = append(l.acked, res.acked...)
	if res.err == nil && (res.first == nil || res.last == res.first) {
		res.err = fmt.Errorf("stream ended without its two run records: first %v, last %v", res.first, res.last)
	}
	return res
}

// waitSettled waits, boundedly, until no run of l's session is running or
// pending: the survivors marked those of the dead replica INTERRUPTED
// once its lease expired. It returns the session's runs.
func (h *killHarness) waitSettled(l *sessionLog, rng *rand.Rand) ([]*agentrunnerv1.Run, bool) {
	t := h.t
	var runs []*agentrunnerv1.Run
	for range 300 { // 30 s: two lease lifetimes are 4 s
		resp, err := h.live(rng).rc.ListRuns(context.Background(), &servicev1.ListRunsRequest{AppName: "slow", UserId: "u", SessionId: l.id})
		if err != nil {
			t.Errorf("%s: ListRuns: %v", l.id, err)
			return nil, false
		}
		runs = resp.GetRuns()
		if !slices.ContainsFunc(runs, func(r *agentrunnerv1.Run) bool {
			return r.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_RUNNING || r.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_PENDING
		}) {
			return runs, true
		}
		time.Sleep(100 * time.Millisecond) // polling the survivors' recovery
	}
	t.Errorf("%s: runs still running or pending 30s after the kill (the dead replica's leases never expired, or no survivor recovers): %v", l.id, runs)
	return nil, false
}

// recoverCut waits until the survivors marked the cut run (request id
// reqID, run id runID if its first record reached the client) INTERRUPTED and resumes it on a survivor, which must complete
// it. stored is false when the kill left no record of the run.
func (h *killHarness) recoverCut(l *sessionLog, rng *rand.Rand, reqID, runID string) (stored, ok bool) {
	t := h.t
	runs, ok := h.waitSettled(l, rng)
	if !ok {
		return false, false
	}
	i := slices.IndexFunc(runs, func(r *agentrunnerv1.Run) bool { return r.GetRequestId() == reqID })
	if i < 0 {
		t.Logf("%s: the kill left no record of the run it cut off (request %s, run id %q streamed): it is sent again", l.id, reqID, runID)
		return false, true
	}
	rec := runs[i]
	if l.split[reqID] {
		l.split[rec.GetRunId()] = true
		t.Logf("%s: the overtaken run %s is %v, events #%d to #%d", l.id, rec.GetRunId(), rec.GetStatus(), rec.GetFirstSequence(), rec.GetLastSequence())
	}
	if !slices.Contains(l.execs, rec.GetRunId()) {
		// Cut before its first record reached the client.
		l.execs = append(l.execs, rec.GetRunId())
	}
	if rec.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		return true, true // it ended before the kill; only its last record was lost
	}
	if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED {
		t.Errorf("%s: run %s cut off by the kill is %v after recovery, want INTERRUPTED", l.id, rec.GetRunId(), rec.GetStatus())
		return true, false
	}
	l.cut = append(l.cut, rec.GetRunId())
	rep := h.live(rng)
	stream, err := rep.rc.ResumeRun(context.Background(), &servicev1.ResumeRunRequest{RunId: rec.GetRunId()})
	if err != nil {
		t.Errorf("%s: ResumeRun(%s) on %s: %v", l.id, rec.GetRunId(), rep.name, err)
		return true, false
	}
	res := h.read(l, stream.Recv, func() {})
	if res.err != nil || res.last.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("%s: ResumeRun(%s) on %s ended %v, %v; want SUCCEEDED", l.id, rec.GetRunId(), rep.name, res.last, res.err)
		return true, false
	}
	return true, true
}

// checkSession checks what is stored of l's session against what its
// client saw: every acknowledged event stored as it was acknowledged, the
// runs in contiguous blocks in the order they ran, n of them, all
// SUCCEEDED.
func (h *killHarness) checkSession(l *sessionLog, n int) {
	t := h.t
	rep := h.replicas[slices.IndexFunc(h.replicas, func(r *replica) bool { return !r.killed.Load() })]
	got, err := rep.sc.GetSession(context.Background(), &servicev1.GetSessionRequest{AppName: "slow", UserId: "u", SessionId: l.id})
	if err != nil {
		t.Errorf("%s: GetSession: %v", l.id, err)
		return
	}
	events := got.GetEvents()
	stored := map[string]*agentrunnerv1.Event{}
	for i, ev := range events {
		if ev.GetSequence() != uint64(i+1) {
			t.Errorf("%s: event %d has sequence %d; want gapless sequences", l.id, i, ev.GetSequence())
			return
		}
		stored[ev.GetId()] = ev
	}
	// (1) No acknowledged event lost.
	for _, a := range l.acked {
		ev, ok := stored[a.GetId()]
		switch {
		case !ok:
			t.Errorf("%s: acknowledged event %s (#%d of run %s) is not stored", l.id, a.GetId(), a.GetSequence(), a.GetInvocationId())
		case ev.GetSequence() != a.GetSequence() || ev.GetInvocationId() != a.GetInvocationId():
			t.Errorf("%s: event %s acknowledged as #%d of %s, stored as #%d of %s", l.id, a.GetId(), a.GetSequence(), a.GetInvocationId(), ev.GetSequence(), ev.GetInvocationId())
		}
	}
	// (2) Each run's events are one block, the blocks in the order the
	// runs ran; a cut run that a later run overtook before its resume
	// (split) continues in a block of its own.
	var blocks []string
	for i, ev := range events {
		if i == 0 || ev.GetInvocationId() != events[i-1].GetInvocationId() {
			blocks = append(blocks, ev.GetInvocationId())
		}
	}
	var want []string
	for _, id := range l.execs {
		if !slices.Contains(blocks, id) || (len(want) > 0 && want[len(want)-1] == id) {
			continue // stored nothing, or resumed right after it was cut
		}
		if slices.Contains(want, id) && !l.split[id] {
			continue
		}
		want = append(want, id)
	}
	if !slices.Equal(blocks, want) {
		t.Errorf("%s: runs' event blocks in the session %v; want %v (the runs in the order they ran, each contiguous)", l.id, blocks, want)
	}
	// (3), (4) Every run ended SUCCEEDED, none is left running or
	// interrupted, and each cut run is one of them.
	runs, err := rep.rc.ListRuns(context.Background(), &servicev1.ListRunsRequest{AppName: "slow", UserId: "u", SessionId: l.id})
	if err != nil {
		t.Errorf("%s: ListRuns: %v", l.id, err)
		return
	}
	succeeded := 0
	for _, r := range runs.GetRuns() {
		if r.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
			succeeded++
			continue
		}
		t.Errorf("%s: run %s is %v (%v); want every run SUCCEEDED", l.id, r.GetRunId(), r.GetStatus(), r.GetError())
	}
	if succeeded != n {
		t.Errorf("%s: %d runs succeeded; want %d", l.id, succeeded, n)
	}
}

// dumpLogs prints the replicas' logs.
func (h *killHarness) dumpLogs() {
	for _, r := range h.replicas {
		h.t.Logf("log of %s:\n%s", r.name, r.p.logs)
	}
}
