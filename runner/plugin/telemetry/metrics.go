package telemetry

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/agentrunner/agentrunner/runner/agent"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Metric names of agentrunner's own; the GenAI ones follow the
// conventions (gen_ai.client.operation.duration, gen_ai.client.token.usage).
const (
	MetricRunsStarted  = "agentrunner.runs.started"
	MetricRunsEnded    = "agentrunner.runs.ended"
	MetricRunDuration  = "agentrunner.run.duration"
	MetricRunsActive   = "agentrunner.runs.active"
	MetricQueueWait    = "agentrunner.run.queue_wait"
	MetricToolCalls    = "agentrunner.tool.calls"
	MetricModelCalls   = "gen_ai.client.operation.duration"
	MetricTokenUsage   = "gen_ai.client.token.usage"
	statusKey          = attribute.Key("agentrunner.run.status")
	outcomeKey         = attribute.Key("agentrunner.tool.outcome")
	runStatusSucceeded = "succeeded"
	runStatusFailed    = "failed"
	runStatusCancelled = "cancelled"
)

// meters are the plugin's instruments, and the start times they need.
type meters struct {
	started, ended, tools metric.Int64Counter
	active                metric.Int64UpDownCounter
	runDuration, calls    metric.Float64Histogram
	queueWait             metric.Float64Histogram
	tokens                metric.Int64Histogram

	mu     sync.Mutex
	starts map[string]started // by span key
}

// started is when a run or call started, and its model for a call.
type started struct {
	at    time.Time
	model string
}

// newMeters makes the instruments on mp.
func newMeters(mp metric.MeterProvider) (*meters, error) {
	m := mp.Meter("github.com/agentrunner/agentrunner/runner")
	var errs []error
	must := func(err error) { errs = append(errs, err) }
	ms := &meters{starts: map[string]started{}}
	var err error
	ms.started, err = m.Int64Counter(MetricRunsStarted, metric.WithDescription("Runs started."), metric.WithUnit("{run}"))
	must(err)
	ms.ended, err = m.Int64Counter(MetricRunsEnded, metric.WithDescription("Runs ended, by status."), metric.WithUnit("{run}"))
	must(err)
	ms.active, err = m.Int64UpDownCounter(MetricRunsActive, metric.WithDescription("Runs in progress."), metric.WithUnit("{run}"))
	must(err)
	ms.queueWait, err = m.Float64Histogram(MetricQueueWait, metric.WithDescription("How long runs wait for their session (a run queued behind another) before they start."), metric.WithUnit("s"))
	must(err)
	ms.runDuration, err = m.Float64Histogram(MetricRunDuration, metric.WithDescription("How long runs take, by status."), metric.WithUnit("s"))
	must(err)
	ms.calls, err = m.Float64Histogram(MetricModelCalls, metric.WithDescription("How long model calls take."), metric.WithUnit("s"))
	must(err)
	ms.tokens, err = m.Int64Histogram(MetricTokenUsage, metric.WithDescription("Tokens per model call, input and output."), metric.WithUnit("{token}"))
	must(err)
	ms.tools, err = m.Int64Counter(MetricToolCalls, metric.WithDescription("Tool calls, by tool and outcome."), metric.WithUnit("{call}"))
	must(err)
	return ms, errors.Join(errs...)
}

func (m *meters) start(key, model string) {
	m.mu.Lock()
	m.starts[key] = started{at: time.Now(), model: model}
	m.mu.Unlock()
}

// since returns the seconds since key started and its model, and forgets
// it.
func (m *meters) since(key string) (float64, string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.starts[key]
	delete(m.starts, key)
	return time.Since(s.at).Seconds(), s.model, ok
}

func (m *meters) runStarted(ctx agent.InvocationContext) {
	app := metric.WithAttributes(AppKey.String(ctx.AppName()))
	m.started.Add(ctx, 1, app)
	m.active.Add(ctx, 1, app)
	if t, ok := agent.RunTimesOf(ctx); ok && !t.Created.IsZero() && !t.Started.IsZero() {
		m.queueWait.Record(ctx, max(t.Started.Sub(t.Created), 0).Seconds(), app)
	}
	m.start(runKey(ctx), "")
}

func (m *meters) runEnded(ctx agent.InvocationContext, err error) {
	status := runStatusSucceeded
	switch {
	case err != nil && ctx.Err() != nil:
		status = runStatusCancelled
	case err != nil:
		status = runStatusFailed
	}
	// The run's context may be done; the measurement is still wanted.
	c := context.WithoutCancel(ctx)
	attrs := metric.WithAttributes(AppKey.String(ctx.AppName()), statusKey.String(status))
	m.ended.Add(c, 1, attrs)
	m.active.Add(c, -1, metric.WithAttributes(AppKey.String(ctx.AppName())))
	if d, _, ok := m.since(runKey(ctx)); ok {
		m.runDuration.Record(c, d, attrs)
	}
	// Calls whose end never came (the caller stopped reading) are
	// forgotten with their run.
	m.mu.Lock()
	for k := range m.starts {
		if strings.HasPrefix(k, runKey(ctx)+"\x00") {
			delete(m.starts, k)
		}
	}
	m.mu.Unlock()
}

func (m *meters) modelCallEnded(ctx context.Context, key string, input, output int32, err error) {
	d, model, ok := m.since(key)
	if !ok {
		return
	}
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIRequestModel(model)}
	if err != nil {
		attrs = append(attrs, attribute.String("error.type", "model_error"))
	}
	m.calls.Record(ctx, d, metric.WithAttributes(attrs...))
	if err == nil {
		m.tokens.Record(ctx, int64(input), metric.WithAttributes(semconv.GenAIOperationNameChat, semconv.GenAIRequestModel(model), semconv.GenAITokenTypeInput))
		m.tokens.Record(ctx, int64(output), metric.WithAttributes(semconv.GenAIOperationNameChat, semconv.GenAIRequestModel(model), semconv.GenAITokenTypeOutput))
	}
}

func (m *meters) toolCallEnded(ctx context.Context, tool, outcome string) {
	m.tools.Add(ctx, 1, metric.WithAttributes(semconv.GenAIToolName(tool), outcomeKey.String(outcome)))
}
