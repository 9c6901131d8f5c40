package runner

import (
	"iter"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/runner/plugin/telemetry"
)

// TestQueueWaitMetric: a run queued behind another of its session
// (MULTITASK_STRATEGY_ENQUEUE) records, when it starts, at least the time
// it was held; a run that starts at once records next to nothing.
func TestQueueWaitMetric(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.New(telemetry.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	release, entered := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	root := must[agent.Agent](t)(agent.New(agent.Config{Name: "root", Run: func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			if calls.Add(1) == 1 {
				close(entered)
				<-release
			}
			yield(say("done"), nil)
		}
	}}))
	db := newTestStore(t)
	r := must[*Runner](t)(New(Config{AppName: testApp, Root: root, Store: db, Plugins: []plugin.Plugin{tel}}))
	k := newSession(t, db, "u", "s")
	ctx := t.Context()
	first, err := r.Start(ctx, request(k, "one"))
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	req := request(k, "two")
	req.Strategy = agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE
	second, err := r.Start(ctx, req)
	if err != nil || second.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_PENDING {
		t.Fatalf("enqueued run: %v, %v", second, err)
	}
	held := time.Since(second.GetCreateTime().AsTime()) // at least this long
	close(release)
	for _, id := range []string{first.GetRunId(), second.GetRunId()} {
		for _, err := range r.Attach(ctx, id, 0) {
			if err != nil {
				t.Fatalf("run %s: %v", id, err)
			}
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	var waits *metricdata.HistogramDataPoint[float64]
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == telemetry.MetricQueueWait && len(h.DataPoints) == 1 {
				waits = &h.DataPoints[0]
			}
		}
	}
	if waits == nil || waits.Count != 2 {
		t.Fatalf("queue waits recorded: %+v, want the two runs'", waits)
	}
	// The metric is each run's start time less its create time, as its
	// record says.
	wait := func(id string) float64 {
		rec, err := r.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return rec.GetStartTime().AsTime().Sub(rec.GetCreateTime().AsTime()).Seconds()
	}
	near := func(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }
	if min, _ := waits.Min.Value(); !near(min, wait(first.GetRunId())) {
		t.Errorf("the run that started at once: metric %gs, record %gs", min, wait(first.GetRunId()))
	}
	if max, _ := waits.Max.Value(); !near(max, wait(second.GetRunId())) || max < held.Seconds() {
		t.Errorf("the queued run: metric %gs, record %gs, held at least %gs", max, wait(second.GetRunId()), held.Seconds())
	}
}
