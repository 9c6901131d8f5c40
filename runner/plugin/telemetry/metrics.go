package telemetry

import (
	"context"
	"errors"
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

	starts *runIndex[started] // by span key
	sets   attrSets
}

// attrSets caches the attribute options of measurements by what they
// are made of: an attribute set is sorted and hashed when it is built,
// once per distinct set this way instead of once per measurement. The
// sets are few: apps, statuses, models, tools and outcomes come from the
// configuration.
type attrSets struct{ m sync.Map } // attrKey -> metric.MeasurementOption

// attrKey names a set: its kind and up to two values.
type attrKey struct{ kind, a, b string }

func (c *attrSets) get(k attrKey, attrs func() []attribute.KeyValue) metric.MeasurementOption {
	if o, ok := c.m.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	o, _ := c.m.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(attrs()...)))
	return o.(metric.MeasurementOption)
}

func (m *meters) appSet(app string) metric.MeasurementOption {
	return m.sets.get(attrKey{kind: "app", a: app}, func() []attribute.KeyValue { return []attribute.KeyValue{AppKey.String(app)} })
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
	ms := &meters{starts: newRunIndex[started]()}
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
	m.starts.put(key, started{at: time.Now(), model: model})
}

// since returns the seconds since key started and its model, and forgets
// it.
func (m *meters) since(key string) (float64, string, bool) {
	s, ok := m.starts.take(key)
	return time.Since(s.at).Seconds(), s.model, ok
}

func (m *meters) runStarted(ctx agent.InvocationContext) {
	app := m.appSet(ctx.AppName())
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
	app := ctx.AppName()
	attrs := m.sets.get(attrKey{kind: "status", a: app, b: status}, func() []attribute.KeyValue {
		return []attribute.KeyValue{AppKey.String(app), statusKey.String(status)}
	})
	m.ended.Add(c, 1, attrs)
	m.active.Add(c, -1, m.appSet(app))
	if d, _, ok := m.since(runKey(ctx)); ok {
		m.runDuration.Record(c, d, attrs)
	}
	// Calls whose end never came (the caller stopped reading) are
	// forgotten with their run.
	m.starts.drop(runKey(ctx))
}

func (m *meters) modelCallEnded(ctx context.Context, key string, input, output int32, err error) {
	d, model, ok := m.since(key)
	if !ok {
		return
	}
	failed := ""
	if err != nil {
		failed = "model_error"
	}
	m.calls.Record(ctx, d, m.sets.get(attrKey{kind: "call", a: model, b: failed}, func() []attribute.KeyValue {
		attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIRequestModel(model)}
		if failed != "" {
			attrs = append(attrs, attribute.String("error.type", failed))
		}
		return attrs
	}))
	if err == nil {
		for _, t := range []struct {
			n   int32
			typ attribute.KeyValue
		}{{input, semconv.GenAITokenTypeInput}, {output, semconv.GenAITokenTypeOutput}} {
			m.tokens.Record(ctx, int64(t.n), m.sets.get(attrKey{kind: "tokens", a: model, b: t.typ.Value.AsString()}, func() []attribute.KeyValue {
				return []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIRequestModel(model), t.typ}
			}))
		}
	}
}

func (m *meters) toolCallEnded(ctx context.Context, tool, outcome string) {
	m.tools.Add(ctx, 1, m.sets.get(attrKey{kind: "tool", a: tool, b: outcome}, func() []attribute.KeyValue {
		return []attribute.KeyValue{semconv.GenAIToolName(tool), outcomeKey.String(outcome)}
	}))
}
