package main

// Benchmarks of the web console at scale, in Debian's Chromium against the
// real server (the browser and tab helpers of console_e2e_test.go): a
// session of 100,000 events, and the runs board over 1,000 sessions. The
// stores are seeded through boltstore directly (NoSync, many appends in
// flight so that they share commits) before the server opens them, and
// the seeding is outside the timed region.
//
//	go test ./cmd/agentrunner -run '^$' -bench Console -benchtime 5x

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"github.com/chromedp/chromedp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// maxFetchedShare is the part of a long session's stored size that
// opening it may fetch: the console pages through a session, so opening
// one must cost a page, not the session ("never transfers the whole
// session"). Exceeding it fails the benchmark: it is a correctness check.
const maxFetchedShare = 0.02

// rpcBytesJS sums what the page's RPCs (fetch requests; the page's own
// script and style are not) transferred, headers included, and counts
// them.
const rpcBytesJS = `(() => {
  const rs = performance.getEntriesByType("resource").filter((e) => e.initiatorType === "fetch");
  return [rs.reduce((s, e) => s + Math.max(e.transferSize, e.encodedBodySize), 0), rs.length];
})()`

// BenchmarkConsoleOpenLongSession opens the chat of a session of 100,000
// stored events in a fresh tab, until its newest event (#100000) is on the
// page; a session of 100 events is the baseline. ms/open is the page's own
// clock (performance.now() since the navigation started) when that event
// showed; bytes/open is what its RPCs fetched by then, which for the long
// session must stay under 2% of its stored size.
func BenchmarkConsoleOpenLongSession(b *testing.B) {
	browser(b) // skip before seeding when there is no browser
	for _, n := range []int{100, 100_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) { benchOpenSession(b, n) })
	}
}

func benchOpenSession(b *testing.B, n int) {
	data := filepath.Join(b.TempDir(), "long.db")
	k := store.SessionKey{App: "slow", User: "bench", Session: "long"}
	size := seedLongSession(b, data, k, n)
	_, console := benchServer(b, "--data", data)
	path := console + sessionPath(k.App, k.User, k.Session)
	newest := fmt.Sprintf(`document.querySelector("#timeline article#ev-%d") && performance.now()`, n)
	// A short session fits in a page or two: the share applies to long ones.
	limit := maxFetchedShare * float64(size)
	if n < 10_000 {
		limit = float64(size) * 10
	}
	var ms, fetched, rpcs float64
	for b.Loop() { // b.Loop times from its first call: the seeding is out
		b.StopTimer()
		ctx, done := benchTab(b)
		b.StartTimer()
		opened := benchWait(b, ctx, "the newest event", chromedp.Navigate(path), newest)
		b.StopTimer()
		benchWait(b, ctx, "the loaded chat", nil, `document.querySelector("#timeline")?.dataset.loaded`)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[2]float64](rpcBytesJS))
		if err != nil {
			b.Fatal(err)
		}
		if got[0] <= 0 || got[0] > limit {
			b.Fatalf("opening a session of %d events (%d bytes stored) fetched %.0f bytes in %.0f RPCs: want some, and at most %.0f",
				n, size, got[0], got[1], limit)
		}
		done()
		ms, fetched, rpcs = ms+opened, fetched+got[0], rpcs+got[1]
		b.StartTimer()
	}
	b.ReportMetric(ms/float64(b.N), "ms/open")
	b.ReportMetric(fetched/float64(b.N), "bytes/open")
	b.ReportMetric(rpcs/float64(b.N), "rpcs/open")
	b.ReportMetric(float64(size), "stored-bytes")
}

// benchTab opens a blank tab of the one browser, with a deadline, and
// returns it with the function that closes it.
func benchTab(b *testing.B) (context.Context, func()) {
	b.Helper()
	ctx, cancel := chromedp.NewContext(browser(b))
	ctx, cancelD := context.WithTimeout(ctx, 90*time.Second)
	if err := chromedp.Do(ctx); err != nil {
		b.Fatalf("new tab: %v", err)
	}
	return ctx, func() { cancelD(); cancel() }
}

// benchWait runs first (when given), then polls expr until it is truthy,
// and returns its value as a number (a performance.now() reading).
func benchWait(b *testing.B, ctx context.Context, what string, first chromedp.Action[chromedp.Void], expr string) float64 {
	b.Helper()
	if first != nil {
		if err := chromedp.Do(ctx, first); err != nil {
			b.Fatalf("before %s: %v", what, err)
		}
	}
	v, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ""`))
		b.Fatalf("waiting for %s (%s): %v\npage text:\n%s", what, expr, err, body)
	}
	f, _ := v.(float64)
	return f
}

// seedLongSession stores a session of n events, user and model turns
// alternating, in the bbolt file data, and returns their encoded size.
func seedLongSession(b *testing.B, data string, k store.SessionKey, n int) int64 {
	b.Helper()
	st, err := boltstore.Open(data, boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := b.Context()
	if _, err := st.CreateSession(ctx, k, nil); err != nil {
		b.Fatal(err)
	}
	var size atomic.Int64
	err = inParallel(ctx, n, 128, func(ctx context.Context, i int) error {
		ev := &agentrunnerv1.Event{Author: "user", InvocationId: fmt.Sprintf("turn-%d", i/2), Content: userText(fmt.Sprintf("question %d: where is my order, and when will it ship?", i/2))}
		if i%2 == 1 {
			ev = &agentrunnerv1.Event{Author: "slowpoke", InvocationId: fmt.Sprintf("turn-%d", i/2), TurnComplete: true,
				Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprintf("answer %d: it shipped yesterday and arrives on Friday.", i/2)}}}}}
		}
		stored, err := st.AppendEvent(ctx, k, ev)
		if err != nil {
			return fmt.Errorf("append %d: %w", i, err)
		}
		size.Add(int64(proto.Size(stored)))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return size.Load()
}

// inParallel calls fn(i) for i in [0, n) from width goroutines and returns
// the first error. Many writes in flight share the store's commits.
func inParallel(ctx context.Context, n, width int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next  atomic.Int64
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	for range width {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// boardCase is one shape of the runs board benchmark.
type boardCase struct {
	name  string
	users int    // the sessions' users, sessions spread evenly
	board string // the board's path, listing every active run
}

// Runs board sizes: sessions, finished runs of each, and active runs
// (waiting on a client-executed tool, INPUT_REQUIRED: durable, so they
// stay on the board for the whole benchmark).
const (
	boardSessions = 1000
	boardFinished = 2
	boardWaiting  = 20
)

// BenchmarkConsoleRunsBoard opens the runs board of the orders app over
// 1,000 sessions (of one user; spread over ten, seen by an admin across
// users) with 2,000 finished runs and 20 waiting ones, until it lists the
// 20, then refreshes it. ms/open is the page's clock when the rows were
// on the page, listruns-ms the ListRuns request as the page timed it, and
// refresh-ms a click on Refresh until the new rows replaced the old.
func BenchmarkConsoleRunsBoard(b *testing.B) {
	browser(b)
	for _, c := range []boardCase{
		{"1-user", 1, "runs?app=orders&user=user0"},
		{"10-users", 10, "runs?app=orders&all=1"},
	} {
		b.Run(c.name, func(b *testing.B) { benchBoard(b, c) })
	}
}

func benchBoard(b *testing.B, c boardCase) {
	data := filepath.Join(b.TempDir(), "board.db")
	seedBoard(b, data, c.users)
	addr, console := benchServer(b, "--data", data)
	startWaiting(b, addr, c.users)
	listed := fmt.Sprintf(`document.querySelectorAll("#runs-rows tr[data-run]").length === %d && performance.now()`, boardWaiting)
	listRuns := `performance.getEntriesByType("resource").filter((e) => e.name.endsWith("/ListRuns")).map((e) => e.responseEnd - e.startTime)`
	refresh := `(() => { window.benchOld = document.querySelector("#runs-rows tr[data-run]"); window.benchT0 = performance.now(); document.querySelector("#runs-refresh").click(); return true })()`
	refreshed := fmt.Sprintf(`!window.benchOld.isConnected && document.querySelectorAll("#runs-rows tr[data-run]").length === %d && performance.now() - window.benchT0`, boardWaiting)
	var ms, list, again float64
	for b.Loop() { // b.Loop times from its first call: the seeding is out
		b.StopTimer()
		ctx, done := benchTab(b)
		b.StartTimer()
		opened := benchWait(b, ctx, "the waiting runs", chromedp.Navigate(console+c.board), listed)
		took := benchWait(b, ctx, "the refreshed rows", chromedp.Evaluate[chromedp.Void](refresh), refreshed)
		b.StopTimer()
		lr, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](listRuns))
		if err != nil || len(lr) == 0 {
			b.Fatalf("ListRuns timings: %v, %v", lr, err)
		}
		done()
		ms, list, again = ms+opened, list+lr[0], again+took
		b.StartTimer()
	}
	b.ReportMetric(ms/float64(b.N), "ms/open")
	b.ReportMetric(list/float64(b.N), "listruns-ms")
	b.ReportMetric(again/float64(b.N), "refresh-ms")
}

// seedBoard stores boardSessions sessions of the orders app spread over
// users user0…, each with boardFinished finished runs of two events (the
// question, the answer), as Run would have left them.
func seedBoard(b *testing.B, data string, users int) {
	b.Helper()
	st, err := boltstore.Open(data, boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	start := time.Now().Add(-time.Hour)
	err = inParallel(b.Context(), boardSessions, 64, func(ctx context.Context, i int) error {
		k := store.SessionKey{App: "orders", User: fmt.Sprintf("user%d", i%users), Session: fmt.Sprintf("s%04d", i)}
		if _, err := st.CreateSession(ctx, k, nil); err != nil {
			return err
		}
		for r := range boardFinished {
			if err := seedFinishedRun(ctx, st, k, fmt.Sprintf("run-%04d-%d", i, r), start.Add(time.Duration(i*boardFinished+r)*time.Millisecond)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// seedFinishedRun appends a run's question (run RUNNING) and answer (run
// SUCCEEDED) to session k.
func seedFinishedRun(ctx context.Context, st *boltstore.Store, k store.SessionKey, id string, at time.Time) error {
	run := &agentrunnerv1.Run{RunId: id, AppName: k.App, UserId: k.User, SessionId: k.Session,
		Status: agentrunnerv1.RunStatus_RUN_STATUS_RUNNING, CreateTime: timestamppb.New(at), StartTime: timestamppb.New(at)}
	q := &agentrunnerv1.Event{Author: "user", InvocationId: id, Content: userText("where is order 42?")}
	if _, _, err := st.AppendRunEvent(ctx, k, q, run); err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	run.Status, run.EndTime = agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED, timestamppb.New(at.Add(time.Second))
	a := &agentrunnerv1.Event{Author: "clerk", InvocationId: id, TurnComplete: true,
		Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "Order 42 shipped yesterday."}}}}}
	if _, _, err := st.AppendRunEvent(ctx, k, a, run); err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	return nil
}

// startWaiting starts boardWaiting runs on the first sessions through the
// server, each asking the orders app's offline model to call get_order, a
// tool the caller executes: each run ends its stream INPUT_REQUIRED and
// waits there, on the board, for an answer that never comes.
func startWaiting(b *testing.B, addr string, users int) {
	b.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	rc := servicev1.NewRunnerServiceClient(conn)
	for i := range boardWaiting {
		req := &servicev1.RunRequest{AppName: "orders", UserId: fmt.Sprintf("user%d", i%users), SessionId: fmt.Sprintf("s%04d", i),
			NewMessage: userText(`where is it? call get_order {"order_id": "42"}`)}
		if st, err := runToWait(b.Context(), rc, req); err != nil || st != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
			b.Fatalf("run on %s/%s ended %v, %v; want INPUT_REQUIRED", req.GetUserId(), req.GetSessionId(), st, err)
		}
	}
}

// runToWait runs req and returns the status its stream ended with.
func runToWait(ctx context.Context, rc servicev1.RunnerServiceClient, req *servicev1.RunRequest) (agentrunnerv1.RunStatus, error) {
	stream, err := rc.Run(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("run: %w", err)
	}
	var last agentrunnerv1.RunStatus
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return last, nil
		} else if err != nil {
			return last, fmt.Errorf("run stream: %w", err)
		}
		if r := resp.GetRun(); r != nil {
			last = r.GetStatus()
		}
	}
}
