// Package spendfmt writes what model calls used and cost for people: the
// one way `agentrunner chat`, `runs` and `usage` show tokens and money.
// A cost is shown only as what it is known to be: unknown when no call
// was priced (never "0"), a lower bound when some were not.
//
// Imports: the generated messages and runner/agent (for FormatMicros)
// only.
package spendfmt

import (
	"fmt"
	"strconv"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
)

// Count writes n with thousands separators: 1234567 is "1,234,567".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return sign + string(out)
}

// Cost writes c: "0.0123 USD" when every call was priced; "unknown" when
// none was; "≥ 0.0123 USD (2 calls unpriced)" when some were not, the
// amount then being a lower bound. It returns "" for a nil or empty c
// (no model call counted).
func Cost(c *agentrunnerv1.Cost) string {
	priced := c.GetCurrency() != "" // Cost.currency is empty when no call was priced
	unpriced := c.GetUnpricedCalls()
	switch {
	case !priced && unpriced == 0:
		return ""
	case !priced:
		return "unknown"
	case unpriced == 0:
		return agent.FormatMicros(c.GetMicros()) + " " + c.GetCurrency()
	}
	calls := "calls"
	if unpriced == 1 {
		calls = "call"
	}
	return fmt.Sprintf("≥ %s %s (%d %s unpriced)", agent.FormatMicros(c.GetMicros()), c.GetCurrency(), unpriced, calls)
}

// Short writes c as Cost does, without the count of unpriced calls, for
// a table's column: "0.0123 USD", "≥ 0.0123 USD", "unknown" or "-".
func Short(c *agentrunnerv1.Cost) string {
	switch {
	case c.GetCurrency() == "" && c.GetUnpricedCalls() == 0:
		return "-"
	case c.GetCurrency() == "":
		return "unknown"
	case c.GetUnpricedCalls() > 0:
		return "≥ " + agent.FormatMicros(c.GetMicros()) + " " + c.GetCurrency()
	}
	return agent.FormatMicros(c.GetMicros()) + " " + c.GetCurrency()
}

// Summary writes a run's or a session's spend on one line: "tokens 1,234
// · cost 0.0123 USD", "tokens 1,234 · cost unknown", "tokens 1,234 · cost
// ≥ 0.0123 USD (2 calls unpriced)". It returns "" when no model call
// reported usage: there is nothing to say.
func Summary(u *agentrunnerv1.UsageMetadata, c *agentrunnerv1.Cost) string {
	cost := Cost(c)
	if u == nil && cost == "" {
		return ""
	}
	s := "tokens " + Count(int64(u.GetTotalTokenCount()))
	if cost != "" {
		s += " · cost " + cost
	}
	return s
}
