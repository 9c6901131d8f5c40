package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Spend metric names; Prometheus reads them with a _total suffix
// (agentrunner_model_tokens_total and so on).
const (
	metricModelTokens = "agentrunner.model.tokens"
	metricModelCost   = "agentrunner.model.cost_micros"
	metricModelCalls  = "agentrunner.model.calls"
)

// spendMeter is the plugin that counts what model calls use and cost, by
// app and model: tokens by kind, cost in micro-units by currency, and
// calls by whether they were priced. Its labels are all bounded by the
// apps file (apps, models entries, one currency); the model version a
// provider reports stands in for calls of models without an entry, which
// a provider names from a short list. It never labels by user or
// session: those are unbounded, and GetUsage answers per user.
//
// It reads the complete events with usage as the runner is about to
// store them (on_event), the one hook that sees every model call's
// event, cost included, without a store of its own; it returns nothing,
// so it never changes an event or ends the chain of hooks.
type spendMeter struct {
	tokens, cost, calls metric.Int64Counter
	sets                sync.Map // spendAttrs -> metric.MeasurementOption
	count               atomic.Int64
}

// maxSpendSets bounds the attribute sets the meter keeps (see attrs).
const maxSpendSets = 1024

// spendAttrs names one attribute set: app and model, and the kind of
// tokens, the currency or whether the call was priced.
type spendAttrs struct{ app, model, key, value string }

func newSpendMeter(mp metric.MeterProvider) (*spendMeter, error) {
	m := mp.Meter("github.com/agentrunner/agentrunner/cmd/agentrunner")
	tokens, err1 := m.Int64Counter(metricModelTokens, metric.WithDescription("Tokens model calls used, by app, model and kind (prompt, candidates, thoughts, cached, cache_write)."), metric.WithUnit("{token}"))
	cost, err2 := m.Int64Counter(metricModelCost, metric.WithDescription("What priced model calls cost, in millionths of the currency, by app, model and currency."))
	calls, err3 := m.Int64Counter(metricModelCalls, metric.WithDescription("Model calls that reported usage, by app, model and whether their model has a price."), metric.WithUnit("{call}"))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("spend instruments: %w", err)
	}
	return &spendMeter{tokens: tokens, cost: cost, calls: calls}, nil
}

func (*spendMeter) Name() string { return "spend_metrics" }

// CompleteEventsOnly marks OnEvent as a plugin.CompleteEventHook.
func (*spendMeter) CompleteEventsOnly() {}

// OnEvent counts a complete event's model call.
func (s *spendMeter) OnEvent(ctx agent.InvocationContext, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	u := ev.GetUsageMetadata()
	if ev.GetPartial() || u == nil {
		return nil, nil
	}
	app, model := ctx.AppName(), store.SpendModel(ev)
	// The event is stored even when the run is being cancelled; so is
	// its count.
	mctx := context.WithoutCancel(ctx)
	for _, k := range []struct {
		kind string
		n    int32
	}{
		{"prompt", u.GetPromptTokenCount()},
		{"candidates", u.GetCandidatesTokenCount()},
		{"thoughts", u.GetThoughtsTokenCount()},
		{"cached", u.GetCachedContentTokenCount()},
		{"cache_write", u.GetCacheCreationTokenCount()},
	} {
		if k.n > 0 {
			s.tokens.Add(mctx, int64(k.n), s.attrs(spendAttrs{app, model, "kind", k.kind}))
		}
	}
	c := ev.GetCost()
	priced := c != nil && c.GetUnpricedCalls() == 0 && c.GetCurrency() != ""
	if priced {
		s.cost.Add(mctx, c.GetMicros(), s.attrs(spendAttrs{app, model, "currency", c.GetCurrency()}))
	}
	s.calls.Add(mctx, 1, s.attrs(spendAttrs{app, model, "priced", strconv.FormatBool(priced)}))
	return nil, nil
}

// attrs returns the measurement option of a set, built once: a set is
// sorted and hashed when it is made.
func (s *spendMeter) attrs(a spendAttrs) metric.MeasurementOption {
	if o, ok := s.sets.Load(a); ok {
		return o.(metric.MeasurementOption)
	}
	// A model without a models entry is named by what its provider says,
	// which an OpenAI-compatible endpoint may vary at will: past
	// maxSpendSets the others share one "other" model, so that neither
	// this cache nor the series grow without bound.
	if s.count.Load() >= maxSpendSets {
		a.model = "other"
		if o, ok := s.sets.Load(a); ok {
			return o.(metric.MeasurementOption)
		}
	}
	s.count.Add(1)
	o, _ := s.sets.LoadOrStore(a, metric.WithAttributeSet(attribute.NewSet(
		attribute.String("app", a.app), attribute.String("model", a.model), attribute.String(a.key, a.value))))
	return o.(metric.MeasurementOption)
}
