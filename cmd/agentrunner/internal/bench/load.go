package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// Result holds the figures of one scenario.
type Result struct {
	Name        string  `json:"name"`
	Sessions    int     `json:"sessions"`
	RunsPerSess int     `json:"runs_per_session"`
	Streaming   string  `json:"streaming"` // "none", "sse" or "mixed"
	SessionLen  int     `json:"session_length,omitempty"`
	Stored      int     `json:"stored_sessions,omitempty"`
	Runs        int     `json:"runs"`
	Seconds     float64 `json:"seconds"`
	RunsPerSec  float64 `json:"runs_per_sec"`
	// PersistedPerSec counts complete events (the stored user event
	// included, though it is not streamed).
	PersistedPerSec float64 `json:"persisted_events_per_sec"`
	StreamedPerSec  float64 `json:"streamed_msgs_per_sec"`
	PartialPerSec   float64 `json:"partial_events_per_sec"`
	LatencyMs       Pcts    `json:"run_latency_ms"`
	FirstEventMs    Pcts    `json:"first_event_ms"`
	// ServerCPUPerRunMs is the server process's CPU time per run; zero when
	// the bench did not start the server.
	ServerCPUPerRunMs float64    `json:"server_cpu_ms_per_run,omitempty"`
	PeakRSSMiB        float64    `json:"server_peak_rss_mib,omitempty"`
	File              *FileStats `json:"file,omitempty"`
	// Failed counts the runs that failed, and FirstError is the first
	// one's error, when the scenario tolerated failures (--peer).
	Failed     int    `json:"failed_runs,omitempty"`
	FirstError string `json:"first_error,omitempty"`
}

// Pcts are latency percentiles in milliseconds.
type Pcts struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

func percentiles(d []time.Duration) Pcts {
	if len(d) == 0 {
		return Pcts{}
	}
	slices.Sort(d)
	at := func(q float64) float64 {
		i := min(len(d)-1, int(q*float64(len(d))))
		return float64(d[i].Microseconds()) / 1000
	}
	return Pcts{P50: at(0.50), P95: at(0.95), P99: at(0.99)}
}

// client is the bench's view of one server.
type client struct {
	app      string
	sessions servicev1.SessionServiceClient
	runner   servicev1.RunnerServiceClient
}

// replicas are the clients of a group's servers, one per replica.
// Session i always goes to replica i mod len: the affinity a load
// balancer keeps by session, so that a session's runs never meet on two
// replicas (which would refuse one as a busy session).
type replicas []*client

func (rs replicas) of(i int) *client { return rs[i%len(rs)] }

func newClient(conn *grpc.ClientConn, app string) *client {
	return &client{app: app, sessions: servicev1.NewSessionServiceClient(conn), runner: servicev1.NewRunnerServiceClient(conn)}
}

// runStats is what one Run returned.
type runStats struct {
	latency, first     time.Duration
	msgs, persisted, p int
}

func (c *client) run(ctx context.Context, user, session, text string, sse bool) (runStats, error) {
	mode := agentrunnerv1.StreamingMode_STREAMING_MODE_NONE
	if sse {
		mode = agentrunnerv1.StreamingMode_STREAMING_MODE_SSE
	}
	start := time.Now()
	stream, err := c.runner.Run(ctx, &servicev1.RunRequest{
		AppName: c.app, UserId: user, SessionId: session,
		NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}},
		RunConfig:  &agentrunnerv1.RunConfig{StreamingMode: mode},
	})
	if err != nil {
		return runStats{}, err
	}
	var st runStats
	st.persisted = 1 // the user event is stored, not streamed
	// One message, decoded into again and again, as the loopback probe's
	// client reads (measureStream): the client's cost per message is then
	// the same on both sides of partial_events_per_sec_vs_loopback_stream,
	// whose ratio measures the server.
	resp := &servicev1.RunResponse{}
	for {
		err := stream.RecvMsg(resp)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return runStats{}, err
		}
		if resp.GetRun() != nil {
			// The run record, first and last: not an event, and not
			// counted, so that figures compare with earlier releases.
			continue
		}
		if st.msgs == 0 {
			st.first = time.Since(start)
		}
		st.msgs++
		if e := resp.GetError(); e != nil {
			return runStats{}, fmt.Errorf("in-band error: %s", e.GetMessage())
		}
		if resp.GetEvent().GetPartial() {
			st.p++
		} else {
			st.persisted++
		}
	}
	st.latency = time.Since(start)
	if st.msgs == 0 {
		return runStats{}, errors.New("run streamed nothing")
	}
	return st, nil
}

// message returns a user message of n words, so that a streamed answer
// (which echoes it) has about n partial events.
func message(n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	return strings.Join(words, " ")
}

// loadSpec is one concurrent-sessions scenario.
type loadSpec struct {
	name      string
	sessions  int
	runs      int
	words     int
	streaming string // none, sse, mixed
	sessionID func(i int) string
	// tolerate counts failed runs instead of stopping at the first: the
	// side-by-side with a peer reports every side's failures.
	tolerate bool
}

// runClient is one server's API as the bench drives it: agentrunner's
// gRPC API (client), or a peer's REST API (restClient).
type runClient interface {
	run(ctx context.Context, user, session, text string, sse bool) (runStats, error)
}

// runClients picks the client of session i.
type runClients interface {
	runner(i int) runClient
}

func (rs replicas) runner(i int) runClient { return rs.of(i) }

// tally gathers the runs of one scenario from its sessions' goroutines.
type tally struct {
	mu       sync.Mutex
	lat, fst []time.Duration
	total    runStats
	failed   int
	firstErr error
}

// add records one run; it reports whether the session should go on.
// A failed run stops the scenario unless spec.tolerate, when it is
// counted and the next run follows.
func (t *tally) add(spec loadSpec, sid string, r int, st runStats, err error, cancel func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.failed++
		if t.firstErr == nil {
			t.firstErr = fmt.Errorf("%s: session %s run %d: %w", spec.name, sid, r, err)
		}
		if !spec.tolerate {
			cancel()
			return false
		}
		return true
	}
	t.lat, t.fst = append(t.lat, st.latency), append(t.fst, st.first)
	t.total.msgs += st.msgs
	t.total.persisted += st.persisted
	t.total.p += st.p
	return true
}

// drive runs spec against c: spec.sessions goroutines, each sending
// spec.runs sequential runs to its own session on its replica. progress
// counts runs. Without spec.tolerate the first failed run ends the
// scenario with its error; with it, failed runs are counted in the
// Result (Failed, FirstError) and the scenario goes on.
func drive(ctx context.Context, c runClients, spec loadSpec, progress *atomic.Int64) (Result, error) {
	text := message(spec.words)
	var t tally
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for i := range spec.sessions {
		wg.Go(func() {
			user, sid := fmt.Sprintf("bench-user-%d", i%64), spec.sessionID(i)
			for r := range spec.runs {
				sse := spec.streaming == "sse" || (spec.streaming == "mixed" && (i+r)%2 == 1)
				st, err := c.runner(i).run(ctx, user, sid, text, sse)
				if !t.add(spec, sid, r, st, err, cancel) {
					return
				}
				progress.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	if t.firstErr != nil && !spec.tolerate {
		return Result{}, t.firstErr
	}
	n := len(t.lat)
	res := Result{
		Name: spec.name, Sessions: spec.sessions, RunsPerSess: spec.runs, Streaming: spec.streaming,
		Runs: n, Seconds: elapsed, Failed: t.failed,
		RunsPerSec:      float64(n) / elapsed,
		PersistedPerSec: float64(t.total.persisted) / elapsed,
		StreamedPerSec:  float64(t.total.msgs) / elapsed,
		PartialPerSec:   float64(t.total.p) / elapsed,
		LatencyMs:       percentiles(t.lat),
		FirstEventMs:    percentiles(t.fst),
	}
	if t.firstErr != nil {
		res.FirstError = t.firstErr.Error()
	}
	return res, nil
}

// createSessions creates n sessions with ids from id, 64 at a time, each
// on its replica.
func createSessions(ctx context.Context, c replicas, n int, id func(i int) string, progress *atomic.Int64) error {
	return parallel(ctx, n, 64, func(ctx context.Context, i int) error {
		_, err := c.of(i).sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{
			AppName: c.of(i).app, UserId: fmt.Sprintf("bench-user-%d", i%64), SessionId: id(i),
		})
		progress.Add(1)
		return err
	})
}

// growSession appends n model events to one session, 64 appends in flight,
// as a long conversation would have left them.
func growSession(ctx context.Context, c *client, user, session string, n int, progress *atomic.Int64) error {
	ev := &agentrunnerv1.Event{
		Author: "answer", InvocationId: "grow",
		Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{
			Text: "offline model: you said: " + message(12)}}}},
		TurnComplete: true,
	}
	return parallel(ctx, n, 64, func(ctx context.Context, i int) error {
		_, err := c.sessions.AppendEvent(ctx, &servicev1.AppendEventRequest{AppName: c.app, UserId: user, SessionId: session, Event: ev})
		progress.Add(1)
		return err
	})
}

// parallel calls fn(i) for i in [0, n) from width goroutines and returns
// the first error.
func parallel(ctx context.Context, n, width int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	errs := make(chan error, width)
	var wg sync.WaitGroup
	for range width {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n) && ctx.Err() == nil; i = next.Add(1) - 1 {
				if err := fn(ctx, int(i)); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
