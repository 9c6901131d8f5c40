package apps

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
)

const pricedDoc = `models:
  - name: fast
    provider: offline
    price: { currency: EUR, input: 0.15, output: 0.6 }
  - name: slow
    provider: offline
    price: { currency: EUR, input: 2.5, output: 10, cached_input: 1.25 }
apps:
  - name: a
    budgets:
      run: { tokens: 5000 }
      user_daily: { cost: 1.25 }
      app_daily: { tokens: 1000000, cost: 100 }
    root_agent: { name: r, llm: { model: fast } }
`

// TestParseBudgets: prices and budgets are read, and the budgets reach
// the app in tokens and micro-units of the file's currency.
func TestParseBudgets(t *testing.T) {
	cfg, err := Parse("apps.yaml", []byte(pricedDoc))
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.GetModels()[1].GetPrice(); p.GetInput() != 2.5 || p.GetCachedInput() != 1.25 || p.Thoughts != nil {
		t.Errorf("models[1].price = %v", p)
	}
	built, err := Build(context.Background(), cfg, func(context.Context, string) (model.Model, error) {
		return offline.New(offline.Config{}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := runner.Budgets{
		Run:       runner.BudgetLimit{Tokens: 5000},
		UserDaily: runner.BudgetLimit{Micros: 1_250_000},
		AppDaily:  runner.BudgetLimit{Tokens: 1_000_000, Micros: 100_000_000},
		Currency:  "EUR",
	}
	if got := built[0].Budgets; got != want {
		t.Errorf("budgets %+v, want %+v", got, want)
	}
}

func TestParseBudgetErrors(t *testing.T) {
	tests := []struct {
		name, from, to string
		want           []string
	}{
		{"mixed currencies", "currency: EUR, input: 2.5", "currency: USD, input: 2.5",
			[]string{"models[1].price.currency", "USD differs from models[0]'s EUR"}},
		{"bad currency", "currency: EUR, input: 0.15", "currency: euro, input: 0.15",
			[]string{"apps.yaml:4", "models[0].price.currency", "ISO 4217"}},
		{"no output price", "input: 0.15, output: 0.6", "input: 0.15",
			[]string{"models[0].price", "input and output prices"}},
		{"negative price", "output: 0.6", "output: -0.6",
			[]string{"models[0].price.output", "negative"}},
		{"too many decimals", "input: 0.15,", "input: 0.0000001,",
			[]string{"models[0].price.input", "six decimals"}},
		{"negative tokens", "tokens: 5000", "tokens: -1",
			[]string{"apps[0].budgets.run.tokens", "negative"}},
		{"money budget too precise", "cost: 1.25", "cost: 1.2500001",
			[]string{"apps[0].budgets.user_daily.cost", "six decimals"}},
		// The tolerance for float64's rounding must not grow with the
		// amount until it accepts anything.
		{"large money budget too precise", "cost: 1.25", "cost: 600000.1234567",
			[]string{"apps[0].budgets.user_daily.cost", "six decimals"}},
		// A run's total is 32-bit: a larger budget could never be reached.
		{"run tokens past 32 bits", "tokens: 5000", "tokens: 3000000000",
			[]string{"apps[0].budgets.run.tokens", "at most 2147483647"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(pricedDoc, tc.from, tc.to, 1)
			if doc == pricedDoc {
				t.Fatalf("%q is not in the document", tc.from)
			}
			_, err := Parse("apps.yaml", []byte(doc))
			var ce *Error
			if !errors.As(err, &ce) && !errors.As(err, new(Errors)) {
				t.Fatalf("error %v is not an *Error", err)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v does not contain %q", err, w)
				}
			}
		})
	}
	// A budget in money without a priced model means nothing.
	doc := strings.NewReplacer("    price: { currency: EUR, input: 0.15, output: 0.6 }\n", "", "    price: { currency: EUR, input: 2.5, output: 10, cached_input: 1.25 }\n", "").Replace(pricedDoc)
	if _, err := Parse("apps.yaml", []byte(doc)); err == nil || !strings.Contains(err.Error(), "a budget in money needs prices") {
		t.Errorf("money budgets without prices: %v", err)
	}
}
