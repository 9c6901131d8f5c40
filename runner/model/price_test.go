package model

import (
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// TestPriceCost: each kind of token at its own price, cached and
// cache-write tokens taken out of the prompt, one rounding half up.
func TestPriceCost(t *testing.T) {
	p := &Price{Currency: "USD", Input: 2_500_000, Output: 10_000_000, CachedInput: 1_250_000, CacheWrite: 3_125_000, Thoughts: 12_000_000}
	for _, tc := range []struct {
		name string
		u    *agentrunnerv1.UsageMetadata
		want int64
	}{
		{"plain", &agentrunnerv1.UsageMetadata{PromptTokenCount: 1000, CandidatesTokenCount: 200}, 2500 + 2000},
		{"cached and written", &agentrunnerv1.UsageMetadata{PromptTokenCount: 1000, CachedContentTokenCount: 600, CacheCreationTokenCount: 100, CandidatesTokenCount: 10}, 1913}, // 300*2.5 + 600*1.25 + 100*3.125 + 10*10 = 1912.5
		{"thoughts and tool prompt", &agentrunnerv1.UsageMetadata{PromptTokenCount: 4, ToolUsePromptTokenCount: 6, ThoughtsTokenCount: 5, CandidatesTokenCount: 1}, 10*2.5 + 5*12 + 10},
		{"rounds half up", &agentrunnerv1.UsageMetadata{PromptTokenCount: 1}, 3},                                     // 2.5
		{"rounds down below half", &agentrunnerv1.UsageMetadata{CachedContentTokenCount: 1, PromptTokenCount: 1}, 1}, // 1.25
		{"huge", &agentrunnerv1.UsageMetadata{PromptTokenCount: 2_000_000_000}, 5_000_000_000},
	} {
		c := p.Cost("m", tc.u)
		if c.GetMicros() != tc.want || c.GetCurrency() != "USD" || c.GetModel() != "m" || c.GetUnpricedCalls() != 0 {
			t.Errorf("%s: cost %v, want %d micros USD of model m", tc.name, c, tc.want)
		}
	}
	big := &Price{Input: 1e17}
	if c := big.Cost("m", &agentrunnerv1.UsageMetadata{PromptTokenCount: 2_000_000_000}); c.GetMicros() != 1<<63-1 {
		t.Errorf("a cost past int64 = %d, want it saturated", c.GetMicros())
	}
}
