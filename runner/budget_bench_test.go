package runner

import (
	"context"
	"fmt"
	"iter"
	"path/filepath"
	"testing"

	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// pricedModel prices its inner model's calls, as the retry package does
// for a models entry with a price.
type pricedModel struct {
	model.Model
	price *model.Price
}

func (m pricedModel) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		for r, err := range m.Model.Generate(ctx, req, stream) {
			if r != nil && r.Usage != nil {
				r.Cost = m.price.Cost("priced", r.Usage)
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

// BenchmarkRunBudgets measures what prices and budgets cost a run of
// BenchmarkRunLLM's shape (without fsync, where they weigh most): plain,
// priced (every call's cost on its event and in the ledger), and
// budgeted (priced, with run, session, user and app budgets checked at
// the start and before the call, the daily ones read from the store).
func BenchmarkRunBudgets(b *testing.B) {
	far := BudgetLimit{Tokens: 1 << 50, Micros: 1 << 50}
	for _, tc := range []struct {
		name    string
		priced  bool
		budgets Budgets
	}{
		{"plain", false, Budgets{}},
		{"priced", true, Budgets{}},
		{"budgeted", true, Budgets{Run: far, Session: far, UserDaily: far, AppDaily: far, Currency: "USD"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			db, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Close() })
			var m model.Model = offline.New(offline.Config{})
			if tc.priced {
				m = pricedModel{m, &model.Price{Currency: "USD", Input: 1_250_000, Output: 10_000_000}}
			}
			root, err := llmagent.New(llmagent.Config{Name: "answer", Model: m})
			if err != nil {
				b.Fatal(err)
			}
			r, err := New(Config{AppName: testApp, Root: root, Store: db, Budgets: tc.budgets})
			if err != nil {
				b.Fatal(err)
			}
			k := store.SessionKey{App: testApp, User: "u", Session: "s"}
			if _, err := db.CreateSession(b.Context(), k, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				req := Request{UserID: k.User, SessionID: k.Session, NewMessage: userText(fmt.Sprint("hi ", i))}
				for _, err := range r.Stream(b.Context(), req) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
