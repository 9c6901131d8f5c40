package apps

import (
	"errors"
	"fmt"
	"strings"
)

// MaxErrors bounds the problems reported for one file: enough to fix a
// file in one go, few enough that a file of the wrong kind does not
// bury the terminal.
const MaxErrors = 20

// Errors is every problem found in one apps file, in the order found, at
// most MaxErrors. errors.As finds the first *Error in it.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, 0, len(es)+1)
	for _, e := range es {
		lines = append(lines, e.Error())
	}
	if len(es) >= MaxErrors {
		lines = append(lines, fmt.Sprintf("(stopped after %d problems)", MaxErrors))
	}
	return strings.Join(lines, "\n")
}

func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// errList collects the problems of a file, up to MaxErrors.
type errList struct{ errs Errors }

// add records err: an *Error, the Errors of a nested check, or nil for no
// problem. Any other error becomes an *Error without a path.
func (l *errList) add(err error) {
	if err == nil {
		return
	}
	var es Errors
	var e *Error
	switch {
	case errors.As(err, &es):
		for _, e := range es {
			l.add(e)
		}
		return
	case errors.As(err, &e):
	default:
		e = &Error{Msg: err.Error()}
	}
	if len(l.errs) < MaxErrors {
		l.errs = append(l.errs, e)
	}
}

func (l *errList) full() bool { return len(l.errs) >= MaxErrors }

// err returns nil, the one *Error, or the Errors.
func (l *errList) err() error {
	switch len(l.errs) {
	case 0:
		return nil
	case 1:
		return l.errs[0]
	}
	return l.errs
}

// didYouMean returns ` (did you mean "x"?)` for the candidate closest to
// got, when one is close enough to be a typo: at most a third of its
// letters off, at least two, or one for a name of under four letters.
// Otherwise "".
func didYouMean(got string, candidates []string) string {
	limit := max(2, len(got)/3)
	if len(got) < 4 {
		limit = 1
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if c == "" || c == got {
			continue
		}
		if d := editDistance(strings.ToLower(got), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the edit distance between a and b in bytes, a swap of
// two neighbours counting as one edit (optimal string alignment): "gtp"
// is one slip from "gpt".
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
