package eval

import (
	"encoding/json"
	"math/big"
)

// MatchType is how tool trajectories are compared (ADK's
// ToolTrajectoryCriterion.MatchType).
type MatchType string

// The match types of ADK's TrajectoryEvaluator.
const (
	// MatchExact: the same calls in the same order, nothing more or less.
	MatchExact MatchType = "EXACT"
	// MatchInOrder: every expected call, in order, others allowed between.
	MatchInOrder MatchType = "IN_ORDER"
	// MatchAnyOrder: every expected call, in any order, others allowed.
	MatchAnyOrder MatchType = "ANY_ORDER"
)

// TrajectoryMatch reports whether actual matches expected under mt, as
// ADK's TrajectoryEvaluator decides it for one invocation (1.0 when true,
// 0.0 when not). Two calls match when their names are equal and, unless
// ignoreArgs, their arguments are equal as Python compares dicts (ArgsEqual).
func TrajectoryMatch(mt MatchType, actual, expected []FunctionCall, ignoreArgs bool) bool {
	match := func(e, a FunctionCall) bool {
		return e.Name == a.Name && (ignoreArgs || ArgsEqual(e.Args, a.Args))
	}
	switch mt {
	case MatchInOrder:
		next := 0
		for _, a := range actual {
			if next < len(expected) && match(expected[next], a) {
				next++
			}
		}
		return next == len(expected)
	case MatchAnyOrder:
		left := append([]FunctionCall(nil), actual...)
	expected:
		for _, e := range expected {
			for i, a := range left {
				if match(e, a) {
					left = append(left[:i], left[i+1:]...)
					continue expected
				}
			}
			return false
		}
		return true
	default:
		if len(actual) != len(expected) {
			return false
		}
		for i := range actual {
			if !match(expected[i], actual[i]) {
				return false
			}
		}
		return true
	}
}

// ArgsEqual compares two argument maps the way Python's == compares the
// dicts ADK holds: same keys, values equal, numbers by value (1 == 1.0),
// a bool equal to the number it stands for (True == 1). One difference:
// no arguments (nil) equals empty arguments ({}), where ADK's None != {};
// the server's events do not tell the two apart.
func ArgsEqual(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || !valueEqual(av, bv) {
			return false
		}
	}
	return true
}

func valueEqual(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x.Cmp(y) == 0
	}
	switch av := a.(type) {
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case nil:
		return b == nil
	case map[string]any:
		bv, ok := b.(map[string]any)
		return ok && ArgsEqual(av, bv)
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !valueEqual(av[i], bv[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// number reads v as an exact number: JSON numbers, Go numbers, and bools
// (Python's bool is an int).
func number(v any) (*big.Rat, bool) {
	switch t := v.(type) {
	case json.Number:
		return new(big.Rat).SetString(string(t))
	case float64:
		r := new(big.Rat)
		if r.SetFloat64(t) == nil {
			return nil, false
		}
		return r, true
	case int:
		return new(big.Rat).SetInt64(int64(t)), true
	case int64:
		return new(big.Rat).SetInt64(t), true
	case bool:
		if t {
			return big.NewRat(1, 1), true
		}
		return new(big.Rat), true
	}
	return nil, false
}
