package boltstore

import (
	"testing"

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
