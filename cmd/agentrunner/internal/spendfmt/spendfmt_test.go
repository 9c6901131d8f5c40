package spendfmt

import (
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 1234: "1,234", 123456: "123,456", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestSummary: cost beside tokens, unknown when nothing was priced, a
// lower bound when some calls were not, and nothing without calls.
func TestSummary(t *testing.T) {
	u := &agentrunnerv1.UsageMetadata{PromptTokenCount: 1000, CandidatesTokenCount: 234, TotalTokenCount: 1234}
	for _, c := range []struct {
		name       string
		u          *agentrunnerv1.UsageMetadata
		c          *agentrunnerv1.Cost
		want, cell string
	}{
		{"no call", nil, nil, "", "-"},
		{"priced", u, &agentrunnerv1.Cost{Currency: "USD", Micros: 12_300}, "tokens 1,234 · cost 0.0123 USD", "0.0123 USD"},
		{"priced at nothing", u, &agentrunnerv1.Cost{Currency: "EUR"}, "tokens 1,234 · cost 0.00 EUR", "0.00 EUR"},
		{"unpriced", u, &agentrunnerv1.Cost{UnpricedCalls: 3}, "tokens 1,234 · cost unknown", "unknown"},
		{"partly priced", u, &agentrunnerv1.Cost{Currency: "USD", Micros: 12_300, UnpricedCalls: 2}, "tokens 1,234 · cost ≥ 0.0123 USD (2 calls unpriced)", "≥ 0.0123 USD"},
		{"one unpriced", u, &agentrunnerv1.Cost{Currency: "USD", Micros: 1_500_000, UnpricedCalls: 1}, "tokens 1,234 · cost ≥ 1.50 USD (1 call unpriced)", "≥ 1.50 USD"},
		{"usage before costs were kept", u, nil, "tokens 1,234", "-"},
	} {
		if got := Summary(c.u, c.c); got != c.want {
			t.Errorf("%s: Summary = %q, want %q", c.name, got, c.want)
		}
		if got := Short(c.c); got != c.cell {
			t.Errorf("%s: Short = %q, want %q", c.name, got, c.cell)
		}
	}
}
