package store

import (
	"context"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// DayLayout is how a UTC day is written in spend keys and in the API:
// "2006-01-02".
const DayLayout = time.DateOnly

// SpendStore keeps what model calls used and cost, by UTC day, app, user
// and model. AppendEvent and AppendRunEvent, the runner's appends, add
// every event with usage to the totals of the day the store writes it
// (its own clock, in UTC, whatever the event's timestamp says) in the same
// transaction that stores the event, for its user and for the app as a
// whole, so that the totals are exact, cost no write of their own and,
// on a store shared by replicas, are correct however many of them append.
// AppendEventOnce, the client's append, counts nothing (see Store). No
// count is ever negative (AddUsage). DeleteSession leaves the totals
// alone: what was spent stays spent.
type SpendStore interface {
	// DailySpend returns what user spent in app on day (UTC) and what the
	// app spent that day, all users together. A day without calls is a
	// zero Spend, never nil.
	DailySpend(ctx context.Context, app, user string, day time.Time) (userSpend, appSpend *agentrunnerv1.Spend, err error)
	// ListSpend returns the spend of app (of user when not empty, else of
	// all users together) on each day from from to to (UTC days,
	// inclusive) by model: oldest day first, models by name within a day,
	// days without calls left out.
	ListSpend(ctx context.Context, app, user string, from, to time.Time) ([]DaySpend, error)
}

// DaySpend is what one model used and cost on one UTC day.
type DaySpend struct {
	// Day is the UTC day, as DayLayout writes it.
	Day string
	// Model is SpendModel of the events counted.
	Model string
	Spend *agentrunnerv1.Spend
}

// Day returns t's UTC day as DayLayout writes it.
func Day(t time.Time) string { return t.UTC().Format(DayLayout) }

// SpendModel is the model an event's spend is counted under: the models
// entry that priced it, else the model version the provider reported,
// else "unknown".
func SpendModel(ev *agentrunnerv1.Event) string {
	if m := ev.GetCost().GetModel(); m != "" {
		return m
	}
	if m := ev.GetModelVersion(); m != "" {
		return m
	}
	return "unknown"
}

// AddEventCost adds the cost of ev's model call to total, allocating total
// when it is nil, and returns it; an event without usage adds nothing. An
// event with usage and no cost counts as an unpriced call: its cost is
// unknown, not zero. Run and session costs are kept this way, beside
// AddUsage.
func AddEventCost(total *agentrunnerv1.Cost, ev *agentrunnerv1.Event) *agentrunnerv1.Cost {
	if ev.GetUsageMetadata() == nil {
		return total
	}
	c := ev.GetCost()
	if c == nil {
		c = &agentrunnerv1.Cost{UnpricedCalls: 1}
	}
	return AddCost(total, c)
}

// AddCost adds c to total, allocating total when it is nil, and returns
// it. The model is not summed; the currency is the first one seen (an
// apps file prices every model in one currency).
func AddCost(total, c *agentrunnerv1.Cost) *agentrunnerv1.Cost {
	if c == nil {
		return total
	}
	if total == nil {
		total = &agentrunnerv1.Cost{}
	}
	if total.Currency == "" {
		total.Currency = c.GetCurrency()
	}
	// Never negative: a cost only adds (see AddUsage).
	total.Micros += max(c.GetMicros(), 0)
	total.UnpricedCalls += max(c.GetUnpricedCalls(), 0)
	return total
}

// AddEventSpend adds ev's usage and cost, as one model call, to total,
// allocating total when it is nil, and returns it; an event without usage
// adds nothing.
func AddEventSpend(total *agentrunnerv1.Spend, ev *agentrunnerv1.Event) *agentrunnerv1.Spend {
	if ev.GetUsageMetadata() == nil {
		return total
	}
	if total == nil {
		total = &agentrunnerv1.Spend{}
	}
	total.Usage = AddUsage(total.Usage, ev.GetUsageMetadata())
	total.Cost = AddEventCost(total.Cost, ev)
	total.ModelCalls++
	total.TotalTokens += EventTokens(ev)
	return total
}

// AddSpend adds s to total, allocating total when it is nil, and returns
// it.
func AddSpend(total, s *agentrunnerv1.Spend) *agentrunnerv1.Spend {
	if s == nil {
		return total
	}
	if total == nil {
		total = &agentrunnerv1.Spend{}
	}
	total.Usage = AddUsage(total.Usage, s.GetUsage())
	total.Cost = AddCost(total.Cost, s.GetCost())
	total.ModelCalls += max(s.GetModelCalls(), 0)
	total.TotalTokens += max(s.GetTotalTokens(), 0)
	return total
}
