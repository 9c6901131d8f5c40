package model

import (
	"math/bits"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// DefaultCurrency is the currency of a price that names none.
const DefaultCurrency = "USD"

// Price is a model's price list: micro-units of Currency per million
// tokens of each kind (2.50 per million is 2_500_000), so that one token
// costs exactly Input/1e6 micro-units and a call's cost is whole after one
// rounding.
type Price struct {
	Currency string
	// Input is the price of prompt tokens neither read from nor written
	// to a cache (tool prompt tokens included); Output of the answer's;
	// CachedInput of prompt tokens read from the provider's cache;
	// CacheWrite of those written to it; Thoughts of thinking tokens.
	Input, Output, CachedInput, CacheWrite, Thoughts uint64
}

// Cost is what a call with usage u costs: the sum over token kinds of
// tokens times price, in micro-units, rounded half up once. The sum is
// taken in 128 bits: a price of a million per million tokens times two
// billion tokens does not fit in 64. A cost past int64 saturates (no
// real call comes near). u's counts follow Gemini's usage: cached and
// cache-write tokens are inside the prompt count, thoughts apart from
// the candidates.
func (p *Price) Cost(modelName string, u *agentrunnerv1.UsageMetadata) *agentrunnerv1.Cost {
	cached := uint64(max(u.GetCachedContentTokenCount(), 0))
	written := uint64(max(u.GetCacheCreationTokenCount(), 0))
	prompt := uint64(max(u.GetPromptTokenCount(), 0))
	plain := uint64(max(u.GetToolUsePromptTokenCount(), 0))
	if prompt > cached+written {
		plain += prompt - cached - written
	}
	var hi, lo uint64
	add := func(tokens, price uint64) {
		h, l := bits.Mul64(tokens, price)
		var carry uint64
		lo, carry = bits.Add64(lo, l, 0)
		hi += h + carry
	}
	add(plain, p.Input)
	add(cached, p.CachedInput)
	add(written, p.CacheWrite)
	add(uint64(max(u.GetCandidatesTokenCount(), 0)), p.Output)
	add(uint64(max(u.GetThoughtsTokenCount(), 0)), p.Thoughts)
	add(1, 500_000) // rounds the division below half up
	c := &agentrunnerv1.Cost{Currency: p.Currency, Model: modelName}
	if hi >= 1_000_000 {
		c.Micros = 1<<63 - 1
		return c
	}
	q, _ := bits.Div64(hi, lo, 1_000_000)
	c.Micros = int64(min(q, 1<<63-1))
	return c
}

// Unpriced is the cost of a call of a model without a price: unknown,
// counted as such.
func Unpriced(modelName string) *agentrunnerv1.Cost {
	return &agentrunnerv1.Cost{Model: modelName, UnpricedCalls: 1}
}
