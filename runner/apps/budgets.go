package apps

import (
	"fmt"
	"math"
	"regexp"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/model"
)

// maxPrice bounds a price per million tokens, and a budget in money: far
// above any real one, low enough that micro-units of it fit in an int64
// with room to sum.
const maxPrice = 1e9

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

// validatePrice checks a models entry's price list.
func validatePrice(pr *agentrunnerv1.ModelPrice, p string) error {
	if pr == nil {
		return nil
	}
	p += ".price"
	if c := pr.GetCurrency(); c != "" && !currencyCode.MatchString(c) {
		return &Error{Path: p + ".currency", Msg: fmt.Sprintf("want an ISO 4217 code such as \"USD\", got %q", c)}
	}
	if pr.Input == nil || pr.Output == nil {
		return &Error{Path: p, Msg: "input and output prices (per million tokens) are required; give 0 for a free kind"}
	}
	fields := []struct {
		name string
		v    *float64
	}{{"input", pr.Input}, {"output", pr.Output}, {"cached_input", pr.CachedInput}, {"cache_write", pr.CacheWrite}, {"thoughts", pr.Thoughts}}
	for _, f := range fields {
		if f.v == nil {
			continue
		}
		if err := checkMoney(*f.v, p+"."+f.name); err != nil {
			return err
		}
	}
	return nil
}

// checkMoney checks an amount of money: not negative, below maxPrice,
// with at most six decimals (a whole number of micro-units).
func checkMoney(v float64, path string) error {
	switch {
	case math.IsNaN(v) || v < 0:
		return &Error{Path: path, Msg: fmt.Sprintf("must not be negative, got %v", v)}
	case v > maxPrice:
		return &Error{Path: path, Msg: fmt.Sprintf("must be at most %v, got %v", float64(maxPrice), v)}
	case fractionalMicros(v):
		return &Error{Path: path, Msg: fmt.Sprintf("at most six decimals (a micro-unit), got %v", v)}
	}
	return nil
}

// fractionalMicros reports whether v has a seventh decimal: a fraction
// of a micro-unit that float64's rounding of v alone does not explain.
func fractionalMicros(v float64) bool {
	x := v * 1e6
	ulp := math.Nextafter(x, math.Inf(1)) - x
	return math.Abs(x-math.Round(x)) > math.Max(1e-3, 4*ulp)
}

// validateCurrencies checks that the priced models of a file share one
// currency, so that sums and budgets in money mean something; it returns
// it ("" when no model is priced).
func validateCurrencies(models []*agentrunnerv1.ModelConfig, errs *errList) string {
	currency, first := "", -1
	for i, m := range models {
		if m.GetPrice() == nil {
			continue
		}
		c := m.GetPrice().GetCurrency()
		if c == "" {
			c = model.DefaultCurrency
		}
		switch {
		case first < 0:
			currency, first = c, i
		case c != currency:
			errs.add(&Error{Path: fmt.Sprintf("models[%d].price.currency", i), Msg: fmt.Sprintf("%s differs from models[%d]'s %s: every priced model of a file has the same currency", c, first, currency)})
		}
	}
	return currency
}

// validateBudgets checks an app's budgets; currency is the file's ("" when
// no model has a price, which makes a budget in money meaningless).
func validateBudgets(app *agentrunnerv1.AppConfig, path, currency string, errs *errList) {
	b := app.GetBudgets()
	if b == nil {
		return
	}
	limits := []struct {
		name string
		l    *agentrunnerv1.BudgetLimit
	}{{"run", b.GetRun()}, {"session", b.GetSession()}, {"user_daily", b.GetUserDaily()}, {"app_daily", b.GetAppDaily()}}
	for _, l := range limits {
		p := path + ".budgets." + l.name
		switch t := l.l.GetTokens(); {
		case t < 0:
			errs.add(&Error{Path: p + ".tokens", Msg: "must not be negative"})
		case t > math.MaxInt32 && (l.name == "run" || l.name == "session"):
			// A run's and a session's totals are UsageMetadata's 32-bit
			// counts: a larger limit could never be reached.
			errs.add(&Error{Path: p + ".tokens", Msg: fmt.Sprintf("must be at most %d (a run's and a session's token totals are 32-bit), got %d", math.MaxInt32, t)})
		}
		if err := checkMoney(l.l.GetCost(), p+".cost"); err != nil {
			errs.add(err)
			continue
		}
		if l.l.GetCost() > 0 && currency == "" {
			errs.add(&Error{Path: p + ".cost", Msg: "a budget in money needs prices: give the app's models a price in the models section"})
		}
	}
}

// budgets converts an app's budgets; currency is the file's.
func budgets(b *agentrunnerv1.BudgetsConfig, currency string) runner.Budgets {
	limit := func(l *agentrunnerv1.BudgetLimit) runner.BudgetLimit {
		return runner.BudgetLimit{Tokens: l.GetTokens(), Micros: int64(math.Round(l.GetCost() * 1e6))}
	}
	return runner.Budgets{
		Run: limit(b.GetRun()), Session: limit(b.GetSession()),
		UserDaily: limit(b.GetUserDaily()), AppDaily: limit(b.GetAppDaily()),
		Currency: currency,
	}
}
