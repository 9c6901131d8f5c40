package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentrunner/agentrunner/store"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// scrollJS scrolls the timeline (newest first) down by step px a frame
// until the event at its top is `events` older than where it started, and
// returns the 95th percentile of the frames' durations
// (requestAnimationFrame to the next), the most elements the page held
// (counted every 8th frame), and the median frame.
const scrollJS = `(async (events, step) => {
  const tl = document.querySelector("#timeline");
  const start = Number(tl.dataset.top);
  const frames = [];
  let most = 0, last = performance.now();
  for (let i = 0; i < 100000 && Number(tl.dataset.top) > start - events; i++) {
    tl.scrollTop += step;
    const now = await new Promise((r) => requestAnimationFrame(r));
    frames.push(now - last);
    last = now;
    if ((i & 7) === 0) most = Math.max(most, document.getElementsByTagName("*").length);
  }
  frames.sort((a, b) => a - b);
  return [frames[Math.floor(frames.length * 0.95)] ?? 0, most, frames[Math.floor(frames.length * 0.5)] ?? 0];
})(%d, %d)`

// scrollStep is how far the benchmark scrolls a frame: 500 px, 30,000 px
// a second at 60 frames a second, some 270 events a second, a fast
// fling's pace held for the whole 5,000 events.
const scrollStep = 500

// BenchmarkConsoleScrollLongSession opens the chat of a session of
// 100,000 events until its newest event is on the page (ms/open), then
// scrolls the timeline through 5,000 events, scrollStep a frame:
// p95-frame-ms is the 95th percentile of the frames' durations
// (p50-frame-ms their median) and max-elements the most elements the page
// held meanwhile. It then scrolls on to 20,000 events from the newest,
// faster, and heap-mb is the page's JavaScript heap after a garbage
// collection. Frames are the page's: on a loaded machine the browser
// waits for a core, and the frames with it.
//
//	go test ./cmd/agentrunner -run '^$' -bench ConsoleScroll -benchtime 3x
func BenchmarkConsoleScrollLongSession(b *testing.B) {
	browser(b)
	data := filepath.Join(b.TempDir(), "long.db")
	k := store.SessionKey{App: "slow", User: "bench", Session: "long"}
	n := 100_000
	seedLongSession(b, data, k, n)
	_, console := benchServer(b, "--data", data)
	path := console + sessionPath(k.App, k.User, k.Session)
	newest := fmt.Sprintf(`document.querySelector("#timeline article#ev-%d") && performance.now()`, n)
	var open, p95, p50, elems, heap float64
	for b.Loop() {
		b.StopTimer()
		ctx, done := benchTab(b)
		opened := benchWait(b, ctx, "the newest event", chromedp.Navigate(path), newest)
		benchWait(b, ctx, "the loaded chat", nil, `document.querySelector("#timeline")?.dataset.loaded`)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[3]float64](fmt.Sprintf(scrollJS, 5000, scrollStep), chromedp.EvalAwaitPromise))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[[3]float64](fmt.Sprintf(scrollJS, 15000, 4000), chromedp.EvalAwaitPromise)); err != nil {
			b.Fatal(err)
		}
		var used float64
		err = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			if _, err := cdp.Call(ctx, t, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
				return err
			}
			u, err := cdp.Call(ctx, t, runtime.GetHeapUsage, cdp.Empty{})
			used = u.UsedSize
			return err
		}))
		if err != nil {
			b.Fatal(err)
		}
		done()
		open, p95, p50, elems, heap = open+opened, p95+got[0], p50+got[2], max(elems, got[1]), heap+used
		b.StartTimer()
	}
	b.ReportMetric(open/float64(b.N), "ms/open")
	b.ReportMetric(p95/float64(b.N), "p95-frame-ms")
	b.ReportMetric(p50/float64(b.N), "p50-frame-ms")
	b.ReportMetric(elems, "max-elements")
	b.ReportMetric(heap/float64(b.N)/(1<<20), "heap-mb")
}
