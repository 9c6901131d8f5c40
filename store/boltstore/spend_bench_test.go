package boltstore

import (
	"testing"

	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// spendBenchEvent is a model answer without state delta, so that its
// append takes the wire-level patch of the session record (patchSession):
// the path every event of the runner takes unless it changes state. With
// usage it carries a cost too, as priced model calls do.
func spendBenchEvent(usage bool) *agentrunnerv1.Event {
	ev := benchEvent()
	ev.Actions = nil
	if !usage {
		ev.UsageMetadata = nil
		return ev
	}
	ev.ModelVersion = "gemini-2.5-flash"
	ev.Cost = &agentrunnerv1.Cost{Currency: "USD", Micros: 1234, Model: "flash"}
	return ev
}

// BenchmarkAppendSpend measures one append without fsync (the CPU of the
// committer's work, which an fsync hides otherwise) of an event without
// usage, which must cost nothing for spend, and of one with usage and
// cost, which updates the session's sums and the two rows of the daily
// ledger.
func BenchmarkAppendSpend(b *testing.B) {
	for _, usage := range []bool{false, true} {
		name := map[bool]string{false: "no-usage", true: "usage"}[usage]
		b.Run(name, func(b *testing.B) {
			s, _ := newTestStore(b, Options{NoSync: true})
			k := store.SessionKey{App: "app", User: "u", Session: "s"}
			if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
				b.Fatal(err)
			}
			ev := spendBenchEvent(usage)
			before := s.db.Stats().TxStats
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.AppendEvent(b.Context(), k, ev); err != nil {
					b.Fatal(err)
				}
			}
			after := s.db.Stats().TxStats
			b.ReportMetric(float64(after.GetWrite()-before.GetWrite())/float64(b.N), "pages/op")
		})
	}
}

// BenchmarkPatchTotals measures what an append with usage adds to its
// totals in the committer: the two ledger entries and the session
// record's sums, patched in their encoding (patch.go) against decoded,
// added and encoded as messages (what the store did before).
func BenchmarkPatchTotals(b *testing.B) {
	ev := spendBenchEvent(true)
	entry, _ := proto.Marshal(store.AddEventSpend(store.AddEventSpend(nil, ev), ev))
	rec, _ := proto.Marshal(&agentrunnerv1.Session{AppName: "app", UserId: "u", SessionId: "s", LastSequence: 40,
		Usage: store.AddUsage(nil, ev.GetUsageMetadata()), Cost: store.AddEventCost(nil, ev), TotalTokens: 100})
	b.Run("patched", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for range 2 {
				if _, err := patchSpend(entry, ev); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := patchSession(rec, 41, ev.GetTimestamp(), ev, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("messages", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for range 2 {
				sp := &agentrunnerv1.Spend{}
				if err := proto.Unmarshal(entry, sp); err != nil {
					b.Fatal(err)
				}
				if _, err := proto.Marshal(store.AddEventSpend(sp, ev)); err != nil {
					b.Fatal(err)
				}
			}
			sum := &agentrunnerv1.Session{}
			if err := proto.Unmarshal(rec, sum); err != nil {
				b.Fatal(err)
			}
			sum.Usage = store.AddUsage(sum.Usage, ev.GetUsageMetadata())
			sum.Cost = store.AddEventCost(sum.Cost, ev)
			if _, err := proto.Marshal(sum); err != nil {
				b.Fatal(err)
			}
		}
	})
}
