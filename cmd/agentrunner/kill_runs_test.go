package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent/remotea2a/remotea2atest"
)

// killCycles is how many kill -9 cycles TestKill9RunRecords runs: a few
// in CI, hundreds by hand to catch the rarer interleavings.
var killCycles = flag.Int("kill-cycles", 3, "kill -9 cycles of TestKill9RunRecords")

// killRunsConfig is an app whose run is the user's message and two model
// answers (a sequential agent of two LLM agents on an OpenAI-compatible
// model): a run can be cut off before, between or after its agents. Each
// agent's instruction names it, so the fake knows who calls it. A
// base_url model with no api_key_env sends no key; one attempt per call,
// so the fake's counts are the agents' calls.
const killRunsConfig = `models:
  - name: fake
    provider: openai
    model: gpt-fake
    base_url: %[1]s/v1
    retry: { max_attempts: 1 }
apps:
  - name: pair
    root_agent:
      name: pair
      sequential: {}
      sub_agents:
        - { name: alpha, llm: { model: fake, instruction: "ROLE=alpha" } }
        - { name: beta, llm: { model: fake, instruction: "ROLE=beta" } }
  - name: flow
    root_agent:
      name: flow
      sequential: {}
      sub_agents:
        - name: fan
          parallel: {}
          sub_agents:
            - { name: left, llm: { model: fake, instruction: "ROLE=left" } }
            - { name: right, llm: { model: fake, instruction: "ROLE=right" } }
            - { name: far, remote_a2a: { card_url: %[2]q, timeout: 30s } }
        - name: passes
          loop: { max_iterations: 2 }
          sub_agents:
            - { name: draft, llm: { model: fake, instruction: "ROLE=draft" } }
        - name: router
          llm: { model: fake, instruction: "ROLE=router" }
          sub_agents:
            - { name: helper, llm: { model: fake, instruction: "ROLE=helper" } }
        - { name: wrap, llm: { model: fake, instruction: "ROLE=wrap" } }
`

// killApp is an app of killRunsConfig as the kill -9 harness checks it:
// the agents that answer with text, how many passes each makes in one
// run (a loop's agent answers once a pass), the agent that transfers
// (its answer is a transfer_to_agent call), if any, and the remote A2A
// agent (the test's remotea2atest stand-in, which outlives the kill), if
// any.
type killApp struct {
	name     string
	agents   []string
	passes   map[string]int
	transfer string
	remote   string
}

// The apps of killRunsConfig: pair is a sequence of two LLM agents; flow
// has a parallel agent with a remote A2A branch, a loop of two passes, a
// transfer and a last step.
var (
	pairApp = killApp{name: "pair", agents: []string{"alpha", "beta"}}
	flowApp = killApp{name: "flow", agents: []string{"left", "right", "far", "draft", "helper", "wrap"},
		passes: map[string]int{"draft": 2}, transfer: "router", remote: "far"}
)

// killRoles are every agent of killRunsConfig, by the role its
// instruction names.
var killRoles = []string{"alpha", "beta", "left", "right", "draft", "router", "helper", "wrap"}

// answers returns the answer texts of one run of the app for token, each
// to be stored once, and the agent of each.
func (a killApp) answers(token string) (texts, agents []string) {
	for _, ag := range a.agents {
		if ag == a.remote {
			// The stand-in echoes the user's text, the run's token.
			texts, agents = append(texts, "remote echo: "+token), append(agents, ag)
			continue
		}
		for k := 1; k <= max(1, a.passes[ag]); k++ {
			texts = append(texts, killPass(ag, token, k))
			agents = append(agents, ag)
		}
	}
	return texts, agents
}

// killPass is agent's answer to token on its k-th pass.
func killPass(agent, token string, k int) string {
	return fmt.Sprintf("%s pass %d", killAnswer(agent, token), k)
}

// killToken is the user message of run n of client i in cycle c: unique
// in the data file, so the fake and the checks can tell the runs apart.
func killToken(c, i, n int) string { return fmt.Sprintf("tok%d.%d.%d", c, i, n) }

// killAnswer is the text the fake answers agent with for token.
func killAnswer(agent, token string) string { return agent + " answers " + token }

var killTokenRE = regexp.MustCompile(`tok\d+\.\d+\.(\d+)`)

// fakeChat is an OpenAI Chat Completions server that answers every call
// with killAnswer and counts the calls per token and agent.
type fakeChat struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[[2]string]int // {token, agent} -> calls
}

func newFakeChat(t *testing.T) *fakeChat {
	f := &fakeChat{calls: map[[2]string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeChat) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"fake: bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	var body struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(raw, &body)
	token, agent := tokenAndAgent(string(raw))
	f.mu.Lock()
	f.calls[[2]string{token, agent}]++
	f.mu.Unlock()
	if agent == flowApp.transfer {
		// The same id in every run, as servers that number their calls
		// give: the ledger holds it under the session's first run, and a
		// later run's call cut by the kill must be retried all the same
		// (TestResumeRetriesReusedCallID).
		writeTransfer(w, body.Stream, "helper", "call_t")
		return
	}
	// A loop's agent sees its earlier passes' answers in the history.
	text := killPass(agent, token, 1+strings.Count(string(raw), killAnswer(agent, token)+" pass "))
	if !body.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"gpt-fake","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`, text)
		return
	}
	// Several chunks, so that a streaming run sends partial events.
	w.Header().Set("Content-Type", "text/event-stream")
	words := strings.SplitAfter(text, " ")
	for _, word := range words {
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-fake\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", word)
		w.(http.Flusher).Flush()
	}
	io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-fake\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
}

// writeTransfer answers with a call of transfer_to_agent to target, of
// id id.
func writeTransfer(w http.ResponseWriter, stream bool, target, id string) {
	call := fmt.Sprintf(`{"index":0,"id":%q,"type":"function","function":{"name":"transfer_to_agent","arguments":%q}}`, id, `{"agent_name":"`+target+`"}`)
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"gpt-fake","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[%s]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`, call)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-fake\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[%s]},\"finish_reason\":null}]}\n\n", call)
	io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-fake\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n")
}

// tokenAndAgent finds the run a request is for: the history holds the
// session's earlier runs too, and the current one has the highest number.
// The system message names the agent.
func tokenAndAgent(body string) (token, agent string) {
	best := -1
	for _, m := range killTokenRE.FindAllStringSubmatch(body, -1) {
		if n, _ := strconv.Atoi(m[1]); n > best {
			best, token = n, m[0]
		}
	}
	for _, a := range killRoles {
		if strings.Contains(body, "ROLE="+a) {
			agent = a
		}
	}
	return token, agent
}

// count returns the calls made so far for token, per agent.
func (f *fakeChat) count(token string) map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for _, a := range killRoles {
		out[a] = f.calls[[2]string{token, a}]
	}
	return out
}

// seenRun is what one Run stream showed its client.
type seenRun struct {
	session, token string
	runID          string                  // from the first record
	final          agentrunnerv1.RunStatus // of the final record; UNSPECIFIED if none came
	acked          []*agentrunnerv1.Event  // complete events, with their sequence
	partials       int                     // partial events seen
}

// killFigures are the counts TestKill9RunRecords reports.
type killFigures struct {
	cycles, runs, finals, partials, unseen, interrupted, finishedInterrupted int
	acked                                                                    int
	resumed, resumedWithoutCall                                              int
	remoteTurns, remoteResentSameID, remoteResentNewID                       int
	clientErrors, badFinal, unsettled, resumeFailed, rerun, lost             int
	duplicated, missing, missingResumed                                      int
}

// killRunsHarness is the state of TestKill9RunRecords across its cycles.
type killRunsHarness struct {
	t                 *testing.T
	app               killApp
	bin, config, data string
	fake              *fakeChat
	remote            *remotea2atest.Server
	fig               killFigures
	// remoteIDs are the message ids the remote got for each token, in
	// order; remoteSeen is how many of its messages remoteIDs holds.
	remoteIDs  map[string][]string
	remoteSeen int
	reported   int // mismatches reported in full

	// Per cycle, shared with the clients.
	mu      sync.Mutex
	seen    []*seenRun
	acks    atomic.Int64
	killAt  int64
	enough  chan struct{}
	killed  atomic.Bool
	clientE []string
}

// TestKill9RunRecords kills the server (SIGKILL) while 64 clients run
// two-agent runs on their own sessions, restarts it on the same file and
// checks what the runs' clients were told against what is stored: a
// final record a client saw is the stored status (the record is durable
// before it is sent), no run stays RUNNING or PENDING, each INTERRUPTED
// run resumes to SUCCEEDED without calling an agent whose answer is
// stored, no answer is stored twice, and no acknowledged event is lost.
func TestKill9RunRecords(t *testing.T) { runKillHarness(t, pairApp, *killCycles) }

// killFlowCycles is how many cycles TestKill9WorkflowResume runs.
var killFlowCycles = flag.Int("kill-flow-cycles", 2, "kill -9 cycles of TestKill9WorkflowResume")

// TestKill9WorkflowResume is TestKill9RunRecords on a workflow app with
// a parallel agent, a loop and a transfer: runs are cut inside any of
// them, and a resume must go on where each was cut: no agent called
// again for an answer stored before the kill (a loop's agent once per
// missing pass), no answer stored twice, the rest of the workflow run.
func TestKill9WorkflowResume(t *testing.T) { runKillHarness(t, flowApp, *killFlowCycles) }

func runKillHarness(t *testing.T, app killApp, cycles int) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	// The remote agent lives in the test's process: it outlives every
	// kill -9 of the server, as another team's agent would.
	h := &killRunsHarness{t: t, app: app, bin: filepath.Join(dir, "agentrunner"), data: filepath.Join(dir, "agentrunner.db"), fake: newFakeChat(t),
		remote: remotea2atest.Start(t), remoteIDs: map[string][]string{}}
	if out, err := exec.Command("go", "build", "-o", h.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	h.config = filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(h.config, []byte(fmt.Sprintf(killRunsConfig, h.fake.srv.URL, h.remote.URL+a2asrv.WellKnownAgentCardPath)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := h.start()
	for c := range cycles {
		// The restarted server, once checked, carries the next cycle.
		p = h.cycle(c, p)
	}
	f := h.fig
	t.Logf("%s: cycles %d, runs %d (first record seen), final record seen %d, events acknowledged %d, partial events seen %d, runs admitted unseen %d", app.name, f.cycles, f.runs, f.finals, f.acked, f.partials, f.unseen)
	t.Logf("INTERRUPTED after restart %d (agent tree finished before the kill: %d), resumed %d (with no model call: %d)", f.interrupted, f.finishedInterrupted, f.resumed, f.resumedWithoutCall)
	t.Logf("remote turns received %d, sent again with the same message id %d, with a new id %d", f.remoteTurns, f.remoteResentSameID, f.remoteResentNewID)
	t.Logf("mismatches: client errors %d, final record vs stored %d, RUNNING/PENDING after recovery %d, resume not SUCCEEDED %d, agent called again on resume %d, answers stored twice %d, answers missing from a SUCCEEDED run: not resumed %d, resumed %d, acknowledged events lost %d",
		f.clientErrors, f.badFinal, f.unsettled, f.resumeFailed, f.rerun, f.duplicated, f.missing, f.missingResumed, f.lost)
}

// mismatch counts a failed check and reports the first ones in full: a
// long run that fails everywhere still ends with readable figures.
func (h *killRunsHarness) mismatch(n *int, format string, args ...any) {
	h.t.Helper()
	*n++
	if h.reported++; h.reported <= 40 {
		h.t.Errorf(format, args...)
		return
	}
	h.t.Fail()
}

func (h *killRunsHarness) start() *proc {
	return startBinary(h.t, h.bin, "--addr", "127.0.0.1:0", "--data", h.data, "--config", h.config)
}

// cycle runs the clients on p until killAt events are acknowledged,
// kills p, restarts the server and checks the cycle's runs on it.
func (h *killRunsHarness) cycle(c int, p *proc) *proc {
	t := h.t
	const clients = 64
	conn := dial(t, p.addr)
	rc, sc := servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn)
	sessions := make([]string, clients)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("k%s%d-%d", h.app.name, c, i)
		createSession(t, sc, h.app.name, sessions[i])
	}
	// Vary the kill point, so that cycles cut runs at different stages.
	h.seen, h.clientE, h.enough = nil, nil, make(chan struct{})
	h.acks.Store(0)
	h.killed.Store(false)
	h.killAt = int64(150 + (c*211)%450)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { h.client(ctx, rc, c, i, sessions[i]) })
	}
	select {
	case <-h.enough:
	case err := <-p.exited:
		t.Fatalf("cycle %d: server exited: %v\n%s", c, err, p.logs)
	case <-time.After(2 * time.Minute):
		t.Fatalf("cycle %d: fewer than %d events acknowledged in 2 minutes\n%s", c, h.killAt, p.logs)
	}
	h.killed.Store(true)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	// Every client is done before the restart: none can reach the new
	// server and start a run the checks do not know of.
	wg.Wait()
	for _, e := range h.clientE {
		h.mismatch(&h.fig.clientErrors, "cycle %d: before the kill: %s", c, e)
	}
	p = h.start()
	conn = dial(t, p.addr)
	rc, sc = servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn)
	h.checkCycle(c, rc, sc, sessions)
	return p
}

// client sends runs on its session, one after the other, until the
// server goes away; half the clients stream.
func (h *killRunsHarness) client(ctx context.Context, rc servicev1.RunnerServiceClient, c, i int, session string) {
	mode := agentrunnerv1.StreamingMode_STREAMING_MODE_NONE
	if i%2 == 0 {
		mode = agentrunnerv1.StreamingMode_STREAMING_MODE_SSE
	}
	for n := 1; n <= 10000; n++ {
		r := &seenRun{session: session, token: killToken(c, i, n)}
		err := h.runOnce(ctx, rc, r, mode)
		h.mu.Lock()
		if r.runID != "" {
			h.seen = append(h.seen, r)
		}
		if err != nil && !h.killed.Load() {
			h.clientE = append(h.clientE, fmt.Sprintf("run %s (%s) on %s: %v", r.runID, r.token, session, err))
		}
		h.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// runOnce runs one Run stream to its end, recording what it shows.
func (h *killRunsHarness) runOnce(ctx context.Context, rc servicev1.RunnerServiceClient, r *seenRun, mode agentrunnerv1.StreamingMode) error {
	stream, err := rc.Run(ctx, &servicev1.RunRequest{
		AppName: h.app.name, UserId: "u", SessionId: r.session, NewMessage: userText(r.token),
		RunConfig: &agentrunnerv1.RunConfig{StreamingMode: mode},
	})
	if err != nil {
		return err
	}
	for range 1000 {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			if r.final == agentrunnerv1.RunStatus_RUN_STATUS_UNSPECIFIED {
				return errors.New("the stream ended without a final record")
			}
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case resp.GetRun() != nil && r.runID == "":
			r.runID = resp.GetRun().GetRunId()
		case resp.GetRun() != nil:
			r.final = resp.GetRun().GetStatus()
		case resp.GetEvent().GetPartial():
			r.partials++
		case resp.GetEvent().GetSequence() > 0:
			r.acked = append(r.acked, resp.GetEvent())
			if h.acks.Add(1) == h.killAt {
				close(h.enough)
			}
		}
	}
	return errors.New("more than 1000 messages on one run stream")
}

// checkCycle checks the cycle's runs on the restarted server.
func (h *killRunsHarness) checkCycle(c int, rc servicev1.RunnerServiceClient, sc servicev1.SessionServiceClient, sessions []string) {
	t := h.t
	h.fig.cycles++
	bySession := map[string][]*seenRun{}
	for _, r := range h.seen {
		h.fig.runs++
		h.fig.partials += r.partials
		h.fig.acked += len(r.acked)
		bySession[r.session] = append(bySession[r.session], r)
		if r.final == agentrunnerv1.RunStatus_RUN_STATUS_UNSPECIFIED {
			continue
		}
		// 1. A final record a client saw was on disk before it was sent.
		h.fig.finals++
		rec := getRecord(t, rc, r.runID)
		if r.final != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || rec.GetStatus() != r.final {
			h.mismatch(&h.fig.badFinal, "cycle %d: run %s (%s): the client saw a final record %v, stored after the restart: %v", c, r.runID, r.token, r.final, rec.GetStatus())
		}
	}
	for _, s := range sessions {
		h.checkSession(c, rc, sc, s, bySession[s])
	}
	h.checkRemote(c)
}

// remoteTurnsOf returns the message ids of the remote turns sent for
// token so far, in the order the remote got them.
func (h *killRunsHarness) remoteTurnsOf(token string) []string {
	got := h.remote.Received()
	for _, r := range got[h.remoteSeen:] {
		// The message may narrate earlier runs of the session: the run's
		// token is the highest numbered one.
		tok, _ := tokenAndAgent(r.Text)
		h.remoteIDs[tok] = append(h.remoteIDs[tok], r.MessageID)
	}
	h.remoteSeen = len(got)
	return h.remoteIDs[token]
}

// checkRemote checks the remote turns of cycle c's runs once they are all
// resumed: a run's turn sent again (a resume of a run the kill cut while
// the remote answered) must carry the first send's message id, so that a
// remote that deduplicates does the work once.
func (h *killRunsHarness) checkRemote(c int) {
	if h.app.remote == "" {
		return
	}
	h.remoteTurnsOf("")
	prefix := fmt.Sprintf("tok%d.", c)
	for tok, ids := range h.remoteIDs {
		if !strings.HasPrefix(tok, prefix) {
			continue
		}
		h.fig.remoteTurns += len(ids)
		for _, id := range ids[1:] {
			if id == ids[0] {
				h.fig.remoteResentSameID++
				continue
			}
			h.mismatch(&h.fig.remoteResentNewID, "cycle %d: run %s's remote turn was sent with message id %s, then again with %s", c, tok, ids[0], id)
		}
	}
}

// checkSession settles and checks the runs of one session: those the
// clients saw and those admitted before the kill whose first record never
// reached them.
func (h *killRunsHarness) checkSession(c int, rc servicev1.RunnerServiceClient, sc servicev1.SessionServiceClient, session string, seen []*seenRun) {
	known := map[string]bool{}
	for _, r := range seen {
		known[r.runID] = true
	}
	events := h.sessionEvents(sc, session)
	resumed := map[string]bool{}
	for _, rec := range h.listRuns(rc, session) {
		if !known[rec.GetRunId()] {
			h.fig.unseen++
		}
		switch rec.GetStatus() {
		case agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED, agentrunnerv1.RunStatus_RUN_STATUS_FAILED:
		case agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED:
			h.fig.interrupted++
			resumed[rec.GetRunId()] = true
			h.resumeOne(c, rc, rec, events)
		default:
			// 2. Recovery leaves no run RUNNING or PENDING.
			h.mismatch(&h.fig.unsettled, "cycle %d: run %s on %s is %v after the restart", c, rec.GetRunId(), session, rec.GetStatus())
		}
	}
	events = h.sessionEvents(sc, session)
	h.checkAnswers(c, session, events, h.listRuns(rc, session), resumed)
	// 4. Every event a client saw acknowledged is stored, as it was sent.
	stored := map[string]uint64{}
	for _, ev := range events {
		stored[ev.GetId()] = ev.GetSequence()
	}
	for _, r := range seen {
		for _, ev := range r.acked {
			if seq, ok := stored[ev.GetId()]; !ok || seq != ev.GetSequence() {
				h.mismatch(&h.fig.lost, "cycle %d: run %s (%s): acknowledged event %s (sequence %d, %s) is not stored as such (stored: %v, sequence %d)", c, r.runID, r.token, ev.GetId(), ev.GetSequence(), ev.GetAuthor(), ok, seq)
			}
		}
	}
}

// resumeOne resumes an INTERRUPTED run to its end (3.): it must succeed
// calling each agent only for the answers missing at the kill (a loop's
// agent once per missing pass; the transferring agent not at all once its
// transfer is stored). A run whose last agent had answered has nothing
// left to run: recovery should have marked it finished, not INTERRUPTED.
// A call the kill left in doubt (the transfer's) makes the resume wait
// (INPUT_REQUIRED); it is retried.
func (h *killRunsHarness) resumeOne(c int, rc servicev1.RunnerServiceClient, rec *agentrunnerv1.Run, events []*agentrunnerv1.Event) {
	t := h.t
	id, token := rec.GetRunId(), runToken(rec, events)
	answered := answerCounts(events)
	texts, agents := h.app.answers(token)
	if answered[texts[len(texts)-1]] > 0 {
		h.mismatch(&h.fig.finishedInterrupted, "cycle %d: recovery: run %s (%s): its agent tree had finished before the kill (%s's answer is stored) but it is INTERRUPTED after the restart, not finished", c, id, token, agents[len(agents)-1])
	}
	need := map[string]int{}
	for i, text := range texts {
		if answered[text] == 0 {
			need[agents[i]]++
		}
	}
	if h.app.transfer != "" && !transferStored(events, id, h.app.transfer) {
		need[h.app.transfer]++
	}
	if h.app.remote != "" && answered["remote echo: "+token] == 0 {
		need[h.app.remote]++
	}
	before, remoteBefore := h.fake.count(token), len(h.remoteTurnsOf(token))
	got, err := resumeRun(t.Context(), rc, &servicev1.ResumeRunRequest{RunId: id})
	if err == nil && got.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
		got, err = resumeRun(t.Context(), rc, &servicev1.ResumeRunRequest{RunId: id, RetryCallIds: got.GetPendingCallIds()})
	}
	h.fig.resumed++
	if err != nil || got.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		h.mismatch(&h.fig.resumeFailed, "cycle %d: ResumeRun(%s) (%s) = %v, %v; want SUCCEEDED", c, id, token, got, err)
	}
	after, calls := h.fake.count(token), 0
	if n := len(h.remoteTurnsOf(token)) - remoteBefore; n > 0 && h.app.remote != "" {
		// A remote turn sent again is not re-run work when its answer
		// was missing: the same message id lets the remote deduplicate
		// (checkRemote counts new ids).
		calls += n
		if n > need[h.app.remote] {
			h.mismatch(&h.fig.rerun, "cycle %d: ResumeRun(%s) (%s) sent remote agent %s %d turns; %d of its answers were missing at the kill", c, id, token, h.app.remote, n, need[h.app.remote])
		}
	}
	for _, a := range killRoles {
		n := after[a] - before[a]
		calls += n
		if n > need[a] {
			h.mismatch(&h.fig.rerun, "cycle %d: ResumeRun(%s) (%s) called agent %s %d times; %d of its answers were missing at the kill", c, id, token, a, n, need[a])
		}
	}
	if calls == 0 {
		h.fig.resumedWithoutCall++
	}
}

// transferStored reports whether agent's transfer call of run id is
// stored.
func transferStored(events []*agentrunnerv1.Event, id, agent string) bool {
	for _, ev := range events {
		if ev.GetInvocationId() != id || ev.GetAuthor() != agent {
			continue
		}
		for _, p := range ev.GetContent().GetParts() {
			if p.GetFunctionCall().GetName() == "transfer_to_agent" {
				return true
			}
		}
	}
	return false
}

// checkAnswers checks that no answer is stored twice, and that a
// SUCCEEDED run has every agent's answer once.
func (h *killRunsHarness) checkAnswers(c int, session string, events []*agentrunnerv1.Event, runs []*agentrunnerv1.Run, resumed map[string]bool) {
	counts := answerCounts(events)
	for _, rec := range runs {
		id, token := rec.GetRunId(), runToken(rec, events)
		texts, _ := h.app.answers(token)
		for _, text := range texts {
			n := counts[text]
			var kind *int
			switch {
			case n > 1:
				kind = &h.fig.duplicated
			case n == 0 && rec.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED && resumed[id]:
				kind = &h.fig.missingResumed
			case n == 0 && rec.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED:
				kind = &h.fig.missing
			default:
				continue
			}
			h.mismatch(kind, "cycle %d: run %s (%s) on %s is %v (resumed: %v) and %q is stored %d times", c, id, token, session, rec.GetStatus(), resumed[id], text, n)
		}
	}
}

// runToken is a run's user message: its stored user event, or the input
// of a run that never stored one.
func runToken(rec *agentrunnerv1.Run, events []*agentrunnerv1.Event) string {
	for _, ev := range events {
		if ev.GetInvocationId() == rec.GetRunId() && ev.GetAuthor() == "user" {
			return textOfEvent(ev)
		}
	}
	var b strings.Builder
	for _, p := range rec.GetInput().GetNewMessage().GetParts() {
		b.WriteString(p.GetText())
	}
	return b.String()
}

// answerCounts counts the stored agent events by their text.
func answerCounts(events []*agentrunnerv1.Event) map[string]int {
	n := map[string]int{}
	for _, ev := range events {
		if ev.GetAuthor() != "user" {
			n[textOfEvent(ev)]++
		}
	}
	return n
}

// sessionEvents returns every event of the session, checking that their
// sequences are gapless.
func (h *killRunsHarness) sessionEvents(sc servicev1.SessionServiceClient, session string) []*agentrunnerv1.Event {
	got, err := sc.GetSession(h.t.Context(), &servicev1.GetSessionRequest{AppName: h.app.name, UserId: "u", SessionId: session})
	if err != nil {
		h.t.Fatalf("GetSession(%s): %v", session, err)
	}
	for i, ev := range got.GetEvents() {
		if ev.GetSequence() != uint64(i+1) {
			h.t.Fatalf("session %s: event %d has sequence %d; sequences must be gapless", session, i, ev.GetSequence())
		}
	}
	return got.GetEvents()
}

// listRuns returns every run of the session.
func (h *killRunsHarness) listRuns(rc servicev1.RunnerServiceClient, session string) []*agentrunnerv1.Run {
	var runs []*agentrunnerv1.Run
	req := &servicev1.ListRunsRequest{AppName: h.app.name, UserId: "u", SessionId: session, PageSize: 1000}
	for range 100 {
		resp, err := rc.ListRuns(h.t.Context(), req)
		if err != nil {
			h.t.Fatalf("ListRuns(%s): %v", session, err)
		}
		runs = append(runs, resp.GetRuns()...)
		if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" {
			return runs
		}
	}
	h.t.Fatalf("ListRuns(%s): more than 100 pages", session)
	return nil
}

// resumeRun resumes a run and returns the stream's last record, or the
// error that ended the stream.
func resumeRun(ctx context.Context, rc servicev1.RunnerServiceClient, req *servicev1.ResumeRunRequest) (*agentrunnerv1.Run, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	stream, err := rc.ResumeRun(ctx, req)
	if err != nil {
		return nil, err
	}
	var last *agentrunnerv1.Run
	for range 1000 {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return last, nil
		}
		if err != nil {
			return last, err
		}
		if r := resp.GetRun(); r != nil {
			last = r
		}
	}
	return last, errors.New("more than 1000 messages on one resume stream")
}
