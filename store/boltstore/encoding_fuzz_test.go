package boltstore

import (
	"bytes"
	"testing"
	"unicode/utf8"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// FuzzPatchSession: for any record that decodes, the in-place patch an
// append makes (last_sequence, update_time, usage, cost) decodes to what
// decoding, changing and encoding the record gives; a record that does not
// decode is refused or patched, never a panic.
func FuzzPatchSession(f *testing.F) {
	full, _ := proto.Marshal(&agentrunnerv1.Session{AppName: "a", UserId: "u", SessionId: "s", LastSequence: 9,
		UpdateTime: timestamppb.New(timestamppb.Now().AsTime()), Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 3}, CompactedSequence: 4})
	f.Add(full, uint64(10), int64(1_700_000_000), int32(5), int32(2), int64(0))
	f.Add([]byte{}, uint64(1), int64(0), int32(0), int32(0), int64(0))
	f.Add([]byte{0x0a, 0x05, 'a'}, uint64(1), int64(-5), int32(7), int32(-1), int64(3))
	withCost, _ := proto.Marshal(&agentrunnerv1.Session{LastSequence: 2, Usage: &agentrunnerv1.UsageMetadata{TotalTokenCount: 4},
		Cost: &agentrunnerv1.Cost{Currency: "USD", Micros: 10, UnpricedCalls: 1}})
	f.Add(withCost, uint64(3), int64(1_700_000_000), int32(0), int32(5), int64(-1))
	f.Add(withCost, uint64(3), int64(1_700_000_000), int32(0), int32(5), int64(7))
	f.Fuzz(func(t *testing.T, sv []byte, seq uint64, sec int64, nanos, tokens int32, micros int64) {
		ts := &timestamppb.Timestamp{Seconds: sec, Nanos: nanos}
		if ts.CheckValid() != nil {
			return // events carry only valid times (the server checks them)
		}
		// micros < 0 stands for an event with usage and no cost: an
		// unpriced call.
		ev := &agentrunnerv1.Event{}
		if tokens != 0 {
			ev.UsageMetadata = &agentrunnerv1.UsageMetadata{PromptTokenCount: tokens, TotalTokenCount: tokens}
		}
		if micros >= 0 {
			ev.Cost = &agentrunnerv1.Cost{Currency: "EUR", Micros: micros, Model: "m"}
		}
		got, err := patchSession(sv, seq, ts, ev, true)
		want := &agentrunnerv1.Session{}
		if proto.Unmarshal(sv, want) != nil {
			return
		}
		if err != nil {
			t.Fatalf("a record that decodes was refused: %v", err)
		}
		want.LastSequence, want.UpdateTime = seq, ts
		want.Usage = store.AddUsage(want.Usage, ev.GetUsageMetadata())
		want.Cost = store.AddEventCost(want.Cost, ev)
		if ev.GetUsageMetadata() != nil {
			want.TotalTokens += store.EventTokens(ev)
		}
		dec := &agentrunnerv1.Session{}
		if err := proto.Unmarshal(got, dec); err != nil {
			t.Fatalf("patched record does not decode: %v", err)
		}
		if !proto.Equal(dec, want) || lastSequenceOf(got) != seq {
			t.Fatalf("patched record decodes to %v, want %v", dec, want)
		}
	})
}

// FuzzEventEncoding: an event, as the store writes it (its encoding with
// the sequence appended as a field, which protobuf lets win over any
// earlier one), decodes to the event with that sequence.
func FuzzEventEncoding(f *testing.F) {
	ev, _ := proto.Marshal(&agentrunnerv1.Event{Id: "e1", Author: "a", Sequence: 3, Content: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "hi"}}}}})
	f.Add(ev, uint64(4))
	f.Add([]byte{}, uint64(1))
	f.Fuzz(func(t *testing.T, b []byte, seq uint64) {
		in := &agentrunnerv1.Event{}
		if proto.Unmarshal(b, in) != nil {
			return
		}
		enc, err := proto.Marshal(in)
		if err != nil {
			return // an invalid UTF-8 string: the server refuses it before the store
		}
		enc = protowire.AppendVarint(protowire.AppendTag(enc, eventSequenceField, protowire.VarintType), seq)
		out, err := store.DecodeEvent(enc)
		if err != nil {
			t.Fatalf("stored encoding does not decode: %v", err)
		}
		in.Sequence = seq
		if !proto.Equal(in, out) {
			t.Fatalf("decoded %v, want %v", out, in)
		}
	})
}

// FuzzPatchSpend: for any ledger entry that decodes (or none), the patch
// an append makes decodes to what decoding it, adding the event's spend
// (store.AddEventSpend) and encoding gives; an entry that does not
// decode is refused or patched, never a panic.
func FuzzPatchSpend(f *testing.F) {
	full, _ := proto.Marshal(&agentrunnerv1.Spend{ModelCalls: 3, TotalTokens: 40,
		Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 30, CandidatesTokenCount: 10, TotalTokenCount: 40, TrafficType: "t",
			PromptTokensDetails: []*agentrunnerv1.ModalityTokenCount{{Modality: "TEXT", TokenCount: 30}}},
		Cost: &agentrunnerv1.Cost{Currency: "USD", Micros: 25, UnpricedCalls: 1, Model: "m"}})
	f.Add(full, int32(5), int32(2), int64(7), "USD")
	f.Add([]byte(nil), int32(1), int32(0), int64(-1), "")
	f.Add([]byte{0x08, 0x01, 0x08, 0x02}, int32(-3), int32(9), int64(0), "EUR")
	noCurrency, _ := proto.Marshal(&agentrunnerv1.Spend{Cost: &agentrunnerv1.Cost{Micros: 5}})
	f.Add(noCurrency, int32(2), int32(2), int64(1), "EUR")
	f.Add(append(full, full...), int32(1), int32(1), int64(1), "")
	f.Fuzz(func(t *testing.T, v []byte, prompt, total int32, micros int64, currency string) {
		if !utf8.ValidString(currency) {
			return // the server refuses such a string before the store
		}
		// micros < 0 stands for an unpriced call: usage and no cost.
		ev := &agentrunnerv1.Event{UsageMetadata: &agentrunnerv1.UsageMetadata{PromptTokenCount: prompt, TotalTokenCount: total, CandidatesTokenCount: prompt / 2}}
		if micros >= 0 {
			ev.Cost = &agentrunnerv1.Cost{Currency: currency, Micros: micros, UnpricedCalls: micros % 3, Model: "m"}
		}
		got, err := patchSpend(v, ev)
		want := &agentrunnerv1.Spend{}
		if proto.Unmarshal(v, want) != nil {
			return
		}
		if err != nil {
			t.Fatalf("an entry that decodes was refused: %v", err)
		}
		want = store.AddEventSpend(want, ev)
		dec := &agentrunnerv1.Spend{}
		if err := proto.Unmarshal(got, dec); err != nil {
			t.Fatalf("patched entry does not decode: %v", err)
		}
		if !proto.Equal(dec, want) {
			t.Fatalf("patched entry decodes to %v, want %v", dec, want)
		}
	})
}

// TestAppendMessageLengths: a message field written in place decodes to
// its body whatever the body's length, across the one-byte lengths'
// limit (127) and beyond.
func TestAppendMessageLengths(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 20000} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i)
		}
		out, err := appendMessage([]byte("head"), 5, func(b []byte) ([]byte, error) { return append(b, body...), nil })
		if err != nil {
			t.Fatal(err)
		}
		rest, ok := bytes.CutPrefix(out, []byte("head"))
		num, typ, k := protowire.ConsumeTag(rest)
		got, m := protowire.ConsumeBytes(rest[max(k, 0):])
		if !ok || num != 5 || typ != protowire.BytesType || m < 0 || k+m != len(rest) || !bytes.Equal(got, body) {
			t.Fatalf("body of %d bytes: field %d type %d, %d bytes back, %d left over", n, num, typ, len(got), len(rest)-k-m)
		}
	}
}
