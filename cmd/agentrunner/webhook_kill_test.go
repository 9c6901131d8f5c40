package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/webhook"
	"github.com/agentrunner/agentrunner/store"
)

// webhookKillCycles is how many kill -9 cycles TestKill9WebhooksDelivered
// runs: a few in CI, many by hand.
var webhookKillCycles = flag.Int("webhook-kill-cycles", 3, "kill -9 cycles of TestKill9WebhooksDelivered")

// hookSecret signs the test server's deliveries.
const hookSecret = "kill9-webhook-secret-0123456789"

// hookConfig serves app pair (two LLM agents on the fake model), whose
// runs call back the apps file's webhook unless their StartRun names one,
// and app plain, the same agents with no webhook.
const hookConfig = `models:
  - name: fake
    provider: openai
    model: gpt-fake
    base_url: %[1]s/v1
    retry: { max_attempts: 1 }
apps:
  - name: pair
    webhook: { url: %[2]q }
    root_agent:
      name: pair
      sequential: {}
      sub_agents:
        - { name: alpha, llm: { model: fake, instruction: "ROLE=alpha" } }
        - { name: beta, llm: { model: fake, instruction: "ROLE=beta" } }
  - name: plain
    root_agent:
      name: pair
      sequential: {}
      sub_agents:
        - { name: alpha, llm: { model: fake, instruction: "ROLE=alpha" } }
        - { name: beta, llm: { model: fake, instruction: "ROLE=beta" } }
`

// hookReceiver is a webhook endpoint on 127.0.0.1 that verifies every
// delivery's signature and keeps, per run, the statuses delivered and
// the path they came to.
type hookReceiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	runs   map[string]map[agentrunnerv1.RunStatus]bool
	paths  map[string]string // run id -> path
	ids    map[string]string // delivery id -> run id and status
	posts  int
	bad    int
	notify chan struct{}
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{t: t, runs: map[string]map[agentrunnerv1.RunStatus]bool{}, paths: map[string]string{}, ids: map[string]string{}, notify: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts++
	if err := webhook.Verify([]byte(hookSecret), req.Header.Get(webhook.HeaderSignature), body, time.Now(), 5*time.Minute); err != nil {
		r.bad++
		r.t.Errorf("delivery %s: %v", req.Header.Get(webhook.HeaderDeliveryID), err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	run := &agentrunnerv1.Run{}
	if err := protojson.Unmarshal(body, run); err != nil || run.GetRunId() == "" {
		r.bad++
		r.t.Errorf("delivery body %q: %v", body, err)
		return
	}
	id, what := req.Header.Get(webhook.HeaderDeliveryID), run.GetRunId()+" "+run.GetStatus().String()
	if prev, ok := r.ids[id]; ok && prev != what {
		r.t.Errorf("delivery id %s carried %s, then %s", id, prev, what)
	}
	r.ids[id] = what
	if r.runs[run.GetRunId()] == nil {
		r.runs[run.GetRunId()] = map[agentrunnerv1.RunStatus]bool{}
	}
	r.runs[run.GetRunId()][run.GetStatus()] = true
	r.paths[run.GetRunId()] = req.URL.Path
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// statuses returns the statuses delivered for run.
func (r *hookReceiver) statuses(run string) map[agentrunnerv1.RunStatus]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[run]
}

// delivered reports whether run's delivery of status st has arrived.
func (r *hookReceiver) delivered(run string, st agentrunnerv1.RunStatus) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[run][st]
}

// hookLoad starts runs on fresh sessions from several clients until the
// server goes away, a third with StartRun's own webhook, a third with
// the app's, a third of app plain with none, and keeps the ids of those
// StartRun acknowledged.
type hookLoad struct {
	mu    sync.Mutex
	acked map[string]string // run id -> where it calls back: "/own", "/app" or "" (nowhere)
	n     atomic.Int64
}

func (l *hookLoad) client(c, i int, runs servicev1.RunnerServiceClient, sessions servicev1.SessionServiceClient, own string) {
	for n := 0; ; n++ {
		sid, app, hook := fmt.Sprintf("s%d.%d.%d", c, i, n), "pair", []string{"/app", "/own", ""}[n%3]
		if hook == "" {
			app = "plain"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: app, UserId: "u", SessionId: sid})
		if err != nil {
			cancel()
			return // the server is gone
		}
		req := &servicev1.StartRunRequest{AppName: app, UserId: "u", SessionId: sid, NewMessage: userText(killToken(c, i, n))}
		if hook == "/own" {
			req.Webhook = &agentrunnerv1.Webhook{Url: own}
		}
		resp, err := runs.StartRun(ctx, req)
		cancel()
		if err != nil {
			return
		}
		l.mu.Lock()
		l.acked[resp.GetRun().GetRunId()] = hook
		l.mu.Unlock()
		l.n.Add(1)
	}
}

// TestKill9WebhooksDelivered is issue 51's webhook promise end to end:
// runs end while the server is killed with SIGKILL, cycle after cycle;
// in the end every run StartRun acknowledged has stopped and its final
// status was delivered at least once, to the webhook it named (its own,
// else its app's), every delivery signed, and nothing sent to a host the
// server does not allow.
//
// It runs on a bbolt file and on PostgreSQL, where a restarted server
// recovers the killed one's runs once their leases (--lease-ttl) end.
func TestKill9WebhooksDelivered(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentrunner")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Setenv(webhook.SecretEnv, hookSecret)
	t.Run("bolt", func(t *testing.T) { killWebhooks(t, bin, filepath.Join(t.TempDir(), "agentrunner.db")) })
	t.Run("postgres", func(t *testing.T) { killWebhooks(t, bin, pg.URL(t), "--lease-ttl", "2s") })
}

// killWebhooks is TestKill9WebhooksDelivered on the store data names.
func killWebhooks(t *testing.T, bin, data string, extra ...string) {
	dir := t.TempDir()
	rcv, chat := newHookReceiver(t), newFakeChat(t)
	var forbidden atomic.Int64 // requests to the host not allowed
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { forbidden.Add(1) }))
	t.Cleanup(other.Close)
	config := filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(hookConfig, chat.srv.URL, rcv.srv.URL+"/app")), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--addr", "127.0.0.1:0", "--data", data, "--config", config, "--http-addr", "",
		"--webhook-allow-hosts", strings.TrimPrefix(rcv.srv.URL, "http://"), "--webhook-poll", "20ms", "--webhook-timeout", "1s"}, extra...)
	load := &hookLoad{acked: map[string]string{}}
	for c := range *webhookKillCycles {
		p := startBinary(t, bin, args...)
		conn := dial(t, p.addr)
		runs, sessions := servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn)
		if c == 0 {
			checkWebhookRefusals(t, runs, sessions, other.URL)
		}
		before := load.n.Load()
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() { load.client(c, i, runs, sessions, rcv.srv.URL+"/own") })
		}
		// Kill once this cycle has started some runs, while more end.
		for load.n.Load() < before+30 {
			select {
			case err := <-p.exited:
				t.Fatalf("server exited: %v\n%s", err, p.logs)
			case <-time.After(5 * time.Millisecond):
			}
		}
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.exited
		wg.Wait()
	}
	p := startBinary(t, bin, args...)
	conn := dial(t, p.addr)
	unstored := checkAllDelivered(t, servicev1.NewRunnerServiceClient(conn), rcv, load)
	checkOutboxDrained(t, servicev1.NewAdminServiceClient(conn))
	if n := forbidden.Load(); n != 0 {
		t.Errorf("%d requests reached a host not allowed", n)
	}
	rcv.mu.Lock()
	t.Logf("cycles %d, runs acknowledged %d (unknown to the store after the kills: %d), posts received %d (deliveries %d), bad signatures %d",
		*webhookKillCycles, len(load.acked), unstored, rcv.posts, len(rcv.ids), rcv.bad)
	rcv.mu.Unlock()
}

// checkWebhookRefusals: StartRun refuses, before any run, a webhook the
// server would not call.
func checkWebhookRefusals(t *testing.T, runs servicev1.RunnerServiceClient, sessions servicev1.SessionServiceClient, forbidden string) {
	t.Helper()
	if _, err := sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "pair", UserId: "u", SessionId: "refused"}); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{forbidden + "/hook", "ftp://127.0.0.1/x", "http://user:pw@" + strings.TrimPrefix(forbidden, "http://"), ""} {
		_, err := runs.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "pair", UserId: "u", SessionId: "refused",
			NewMessage: userText("refused"), Webhook: &agentrunnerv1.Webhook{Url: url}})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("StartRun with webhook %q = %v, want InvalidArgument", url, err)
		}
	}
	list, err := runs.ListRuns(t.Context(), &servicev1.ListRunsRequest{AppName: "pair", UserId: "u", SessionId: "refused"})
	if err != nil || len(list.GetRuns()) != 0 {
		t.Errorf("runs after the refusals: %v, %v", list.GetRuns(), err)
	}
}

// checkAllDelivered waits until every acknowledged run has stopped for
// good (recovery marks the runs the kills cut INTERRUPTED) and its final
// status was delivered to its webhook (none for app plain's), within a
// bound. StartRun answers a run only once its record is stored
// (runner.Start), whether it calls back or not: the store must know
// every acknowledged run. It returns how many it does not (a failure).
func checkAllDelivered(t *testing.T, runs servicev1.RunnerServiceClient, rcv *hookReceiver, load *hookLoad) (unstored int) {
	t.Helper()
	finals := map[agentrunnerv1.RunStatus]int{}
	defer func() { t.Logf("final statuses delivered: %v", finals) }()
	deadline := time.After(2 * time.Minute)
	for id, hook := range load.acked {
		var st agentrunnerv1.RunStatus
		for {
			got, err := runs.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: id})
			if status.Code(err) == codes.NotFound {
				unstored++
				t.Errorf("run %s: StartRun acknowledged it, but the store does not know it", id)
				st = agentrunnerv1.RunStatus_RUN_STATUS_UNSPECIFIED
				break
			}
			if err != nil {
				t.Fatalf("GetRun(%s) of an acknowledged run: %v", id, err)
			}
			st = got.GetRun().GetStatus()
			if store.CallsBack(st) && st != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED && (hook == "" || rcv.delivered(id, st)) {
				break
			}
			select {
			case <-rcv.notify:
			case <-time.After(50 * time.Millisecond):
			case <-deadline:
				t.Fatalf("run %s (%s): its final status not delivered within 2 minutes", id, st)
			}
		}
		if st == agentrunnerv1.RunStatus_RUN_STATUS_UNSPECIFIED {
			continue // never stored
		}
		finals[st]++
		rcv.mu.Lock()
		if got := rcv.paths[id]; got != hook {
			t.Errorf("run %s delivered to %q, want %q", id, got, hook)
		}
		rcv.mu.Unlock()
	}
	if len(load.acked) == unstored {
		t.Fatal("no acknowledged run was stored")
	}
	return unstored
}

// checkOutboxDrained: once every delivery arrived, AdminService lists
// none failed, and the pending ones go as their attempts settle.
func checkOutboxDrained(t *testing.T, admin servicev1.AdminServiceClient) {
	t.Helper()
	failed, err := admin.ListWebhookDeliveries(t.Context(), &servicev1.ListWebhookDeliveriesRequest{})
	if err != nil || len(failed.GetDeliveries()) != 0 {
		t.Fatalf("failed deliveries: %v, %v", failed.GetDeliveries(), err)
	}
	deadline := time.After(time.Minute)
	for {
		pending, err := admin.ListWebhookDeliveries(t.Context(), &servicev1.ListWebhookDeliveriesRequest{State: agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_PENDING})
		if err != nil {
			t.Fatal(err)
		}
		if len(pending.GetDeliveries()) == 0 {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("%d deliveries still pending, the first %v", len(pending.GetDeliveries()), pending.GetDeliveries()[0])
		case <-time.After(50 * time.Millisecond):
		}
	}
}
