package boltstore

import (
	"errors"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// The totals an append adds to (a session's usage, cost and tokens, the
// ledger's Spend entries) are patched in their encoding: the committer,
// the one goroutine every write waits on, neither decodes nor encodes
// them as messages. Each patch gives the encoding of what decoding,
// adding (store.AddUsage, store.AddEventCost, store.AddEventSpend) and
// encoding gives, as decoded: protobuf keeps the last occurrence of a
// scalar field and merges the occurrences of a message field, so the
// fields a patch changes are dropped where they are and appended once at
// the end, every other field copied as it is. FuzzPatchSession and
// FuzzPatchSpend check it against the messages' own arithmetic.

var errCorruptTotals = errors.New("corrupt totals")

// Field numbers of the messages the patches write.
const (
	spendUsageField       = 1 // Spend.usage
	spendCostField        = 2 // Spend.cost
	spendModelCallsField  = 3 // Spend.model_calls
	spendTotalTokensField = 4 // Spend.total_tokens

	costCurrencyField      = 1 // Cost.currency
	costMicrosField        = 2 // Cost.micros
	costUnpricedCallsField = 3 // Cost.unpriced_calls
)

// usageSummed are the UsageMetadata fields store.AddUsage sums (int32).
var usageSummed = [...]protowire.Number{1, 2, 3, 4, 5, 6, 11}

// usageDeltas are u's summed fields, in usageSummed's order, never
// negative (as store.AddUsage adds them).
func usageDeltas(u *agentrunnerv1.UsageMetadata) [len(usageSummed)]int32 {
	return [...]int32{
		max(u.GetPromptTokenCount(), 0), max(u.GetCandidatesTokenCount(), 0), max(u.GetThoughtsTokenCount(), 0),
		max(u.GetCachedContentTokenCount(), 0), max(u.GetToolUsePromptTokenCount(), 0), max(u.GetTotalTokenCount(), 0),
		max(u.GetCacheCreationTokenCount(), 0),
	}
}

// fieldIter walks an encoding field by field; next fails on one that
// does not parse. A loop over it, unlike a callback, lets the caller's
// sums stay on its stack.
type fieldIter struct {
	rest       []byte
	num        protowire.Number
	typ        protowire.Type
	val, whole []byte // the field's value bytes; with its tag
}

// next moves to the next field; false at the end.
func (it *fieldIter) next() (bool, error) {
	if len(it.rest) == 0 {
		return false, nil
	}
	num, typ, n := protowire.ConsumeTag(it.rest)
	if n < 0 {
		return false, errCorruptTotals
	}
	m := protowire.ConsumeFieldValue(num, typ, it.rest[n:])
	if m < 0 {
		return false, errCorruptTotals
	}
	it.num, it.typ, it.val, it.whole = num, typ, it.rest[n:n+m], it.rest[:n+m]
	it.rest = it.rest[n+m:]
	return true, nil
}

// varintOf is the value of a varint field's bytes.
func varintOf(val []byte) uint64 {
	x, _ := protowire.ConsumeVarint(val)
	return x
}

// appendVarintField appends field num with value x, left out when zero
// (proto3's implicit presence: decoded, absent is zero).
func appendVarintField(out []byte, num protowire.Number, x uint64) []byte {
	if x == 0 {
		return out
	}
	return protowire.AppendVarint(protowire.AppendTag(out, num, protowire.VarintType), x)
}

// patchUsage appends to out the encoding of store.AddUsage(enc decoded,
// u) (enc: the concatenated payloads of a usage field's occurrences).
func patchUsage(out, enc []byte, u *agentrunnerv1.UsageMetadata) ([]byte, error) {
	var sums [len(usageSummed)]int32
	it := fieldIter{rest: enc}
	for {
		ok, err := it.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		i := -1
		if it.typ == protowire.VarintType {
			for j, f := range usageSummed {
				if it.num == f {
					i = j
				}
			}
		}
		if i < 0 {
			out = append(out, it.whole...)
			continue
		}
		sums[i] = int32(varintOf(it.val))
	}
	for i, d := range usageDeltas(u) {
		out = appendVarintField(out, usageSummed[i], uint64(int64(sums[i]+d)))
	}
	return out, nil
}

// patchCost appends to out the encoding of store.AddCost(enc decoded, c)
// for a non-nil c: its currency where the total has none, its micros
// and unpriced calls added (never less than zero).
func patchCost(out, enc []byte, c *agentrunnerv1.Cost) ([]byte, error) {
	var currency []byte
	var micros, unpriced int64
	it := fieldIter{rest: enc}
	for {
		ok, err := it.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		switch {
		case it.num == costCurrencyField && it.typ == protowire.BytesType:
			currency, _ = protowire.ConsumeBytes(it.val)
		case it.num == costMicrosField && it.typ == protowire.VarintType:
			micros = int64(varintOf(it.val))
		case it.num == costUnpricedCallsField && it.typ == protowire.VarintType:
			unpriced = int64(varintOf(it.val))
		default:
			out = append(out, it.whole...)
		}
	}
	if len(currency) == 0 {
		// Encoding the message would refuse a string that is not UTF-8;
		// so does the patch, rather than store what no one can decode.
		if c := c.GetCurrency(); !utf8.ValidString(c) {
			return nil, errors.New("cost currency is not valid UTF-8")
		} else if c != "" {
			out = protowire.AppendString(protowire.AppendTag(out, costCurrencyField, protowire.BytesType), c)
		}
	} else {
		out = protowire.AppendBytes(protowire.AppendTag(out, costCurrencyField, protowire.BytesType), currency)
	}
	out = appendVarintField(out, costMicrosField, uint64(micros+max(c.GetMicros(), 0)))
	return appendVarintField(out, costUnpricedCallsField, uint64(unpriced+max(c.GetUnpricedCalls(), 0))), nil
}

// unpricedCall is the cost store.AddEventCost adds for an event with
// usage and no cost of its own.
var unpricedCall = &agentrunnerv1.Cost{UnpricedCalls: 1}

// eventCost is the cost store.AddEventCost adds for ev (which has usage).
func eventCost(ev *agentrunnerv1.Event) *agentrunnerv1.Cost {
	if c := ev.GetCost(); c != nil {
		return c
	}
	return unpricedCall
}

// appendMessage appends field num holding the encoding of a message
// whose body is body: a length-prefixed field, always present (the sums
// are messages that exist once anything was added). The body is written
// after a one-byte length, moved when it is longer than 127 bytes.
func appendMessage(out []byte, num protowire.Number, body func([]byte) ([]byte, error)) ([]byte, error) {
	out = protowire.AppendTag(out, num, protowire.BytesType)
	at := len(out)
	out, err := body(append(out, 0))
	if err != nil {
		return nil, err
	}
	n := len(out) - at - 1
	if n < 128 {
		out[at] = byte(n)
		return out, nil
	}
	size := protowire.AppendVarint(nil, uint64(n))
	out = append(out, size[1:]...) // room for the longer length
	copy(out[at+len(size):], out[at+1:at+1+n])
	copy(out[at:], size)
	return out, nil
}

// spendTotals are a ledger entry's sums as patchSpend finds them.
type spendTotals struct {
	usage, cost   []byte // the occurrences' payloads, concatenated
	calls, tokens int64
}

// take keeps the field if it is one of the sums, and reports whether it
// was.
func (t *spendTotals) take(it *fieldIter) bool {
	switch {
	case it.num == spendUsageField && it.typ == protowire.BytesType:
		b, _ := protowire.ConsumeBytes(it.val)
		t.usage = append(t.usage, b...)
	case it.num == spendCostField && it.typ == protowire.BytesType:
		b, _ := protowire.ConsumeBytes(it.val)
		t.cost = append(t.cost, b...)
	case it.num == spendModelCallsField && it.typ == protowire.VarintType:
		t.calls = int64(varintOf(it.val))
	case it.num == spendTotalTokensField && it.typ == protowire.VarintType:
		t.tokens = int64(varintOf(it.val))
	default:
		return false
	}
	return true
}

// patchSpend returns the ledger entry v (nil: none yet) after ev, which
// has usage: store.AddEventSpend's sum, encoded.
func patchSpend(v []byte, ev *agentrunnerv1.Event) ([]byte, error) {
	out := make([]byte, 0, len(v)+48)
	var t spendTotals
	it := fieldIter{rest: v}
	for {
		ok, err := it.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if !t.take(&it) {
			out = append(out, it.whole...)
		}
	}
	out, err := appendMessage(out, spendUsageField, func(b []byte) ([]byte, error) { return patchUsage(b, t.usage, ev.GetUsageMetadata()) })
	if err != nil {
		return nil, err
	}
	if out, err = appendMessage(out, spendCostField, func(b []byte) ([]byte, error) { return patchCost(b, t.cost, eventCost(ev)) }); err != nil {
		return nil, err
	}
	out = appendVarintField(out, spendModelCallsField, uint64(t.calls+1))
	return appendVarintField(out, spendTotalTokensField, uint64(t.tokens+int64(max(ev.GetUsageMetadata().GetTotalTokenCount(), 0)))), nil
}
