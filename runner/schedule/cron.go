package schedule

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Spec is a parsed cron expression in its time zone: the times a
// schedule fires. Next is its one question.
//
// Syntax: five fields (minute hour day-of-month month day-of-week) or
// six with a leading seconds field; each field "*", "?", a value, a
// range "a-b", a step "*/n", "a-b/n" or "a/n", or a comma list of
// those; months jan-dec and weekdays sun-sat by name, Sunday as 0 or 7.
// When both day fields are restricted a day matching either fires (the
// cron rule). Descriptors: @yearly (@annually), @monthly, @weekly,
// @daily (@midnight), @hourly, and @every DURATION.
//
// Times are the zone's wall-clock times: a time that does not exist
// there (skipped by a daylight-saving change) does not fire, and one
// that happens twice (the clock set back) fires once, at its first
// occurrence. @every fires at the multiples of its interval since the
// Unix epoch, whatever the zone, so that every replica computes the
// same times.
type Spec struct {
	sec, min, hour, dom, month, dow uint64 // bit sets
	domStar, dowStar                bool
	every                           time.Duration
	loc                             *time.Location
}

// MaxYears bounds the search for a next time: a spec that matches no day
// within it (February 30th) never fires, and Parse refuses it.
const maxYears = 9

// Parse parses expr in the IANA time zone tz ("" is UTC).
func Parse(expr, tz string) (*Spec, error) {
	loc, err := loadZone(tz)
	if err != nil {
		return nil, err
	}
	s, err := parseExpr(strings.TrimSpace(expr))
	if err != nil {
		return nil, fmt.Errorf("cron %q: %w", expr, err)
	}
	s.loc = loc
	if s.every == 0 && s.Next(time.Unix(0, 0)).IsZero() {
		return nil, fmt.Errorf("cron %q matches no day: it would never fire", expr)
	}
	return s, nil
}

func loadZone(tz string) (*time.Location, error) {
	if tz == "" || tz == "UTC" {
		return time.UTC, nil
	}
	if strings.EqualFold(tz, "local") {
		// The server's own zone would make replicas disagree.
		return nil, fmt.Errorf("time zone %q: name an IANA zone (Europe/Paris), not the server's", tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", tz, err)
	}
	return loc, nil
}

var descriptors = map[string]string{
	"@yearly": "0 0 0 1 1 *", "@annually": "0 0 0 1 1 *", "@monthly": "0 0 0 1 * *",
	"@weekly": "0 0 0 * * 0", "@daily": "0 0 0 * * *", "@midnight": "0 0 0 * * *", "@hourly": "0 0 * * * *",
}

func parseExpr(expr string) (*Spec, error) {
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, fmt.Errorf("@every: %w", err)
		}
		if d < time.Second || d%time.Second != 0 {
			return nil, fmt.Errorf("@every %s: the interval must be a whole number of seconds, at least 1s", d)
		}
		return &Spec{every: d}, nil
	}
	if strings.HasPrefix(expr, "@") {
		d, ok := descriptors[expr]
		if !ok {
			return nil, fmt.Errorf("unknown descriptor %s (want @yearly, @monthly, @weekly, @daily, @hourly or @every DURATION)", expr)
		}
		expr = d
	}
	fields := strings.Fields(expr)
	switch len(fields) {
	case 5:
		fields = append([]string{"0"}, fields...)
	case 6:
	default:
		return nil, fmt.Errorf("%d fields: want 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)", len(fields))
	}
	s := &Spec{}
	var err error
	for i, f := range []struct {
		name     string
		min, max int
		names    []string
		out      *uint64
	}{
		{"seconds", 0, 59, nil, &s.sec}, {"minutes", 0, 59, nil, &s.min}, {"hours", 0, 23, nil, &s.hour},
		{"day-of-month", 1, 31, nil, &s.dom}, {"month", 1, 12, monthNames, &s.month}, {"day-of-week", 0, 7, dayNames, &s.dow},
	} {
		if *f.out, err = parseField(fields[i], f.min, f.max, f.names); err != nil {
			return nil, fmt.Errorf("%s field %q: %w", f.name, fields[i], err)
		}
	}
	if s.dow&(1<<7) != 0 {
		s.dow |= 1 // 7 is Sunday too
	}
	s.domStar, s.dowStar = isStar(fields[3]), isStar(fields[5])
	return s, nil
}

var (
	monthNames = []string{"", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	dayNames   = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
)

// isStar: a field that begins with "*" (or is "?") leaves its day rule
// unrestricted, as in Vixie cron.
func isStar(f string) bool { return strings.HasPrefix(f, "*") || f == "?" }

// parseField parses one field into the set of its values.
func parseField(f string, lo, hi int, names []string) (uint64, error) {
	var set uint64
	for part := range strings.SplitSeq(f, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > hi-lo+1 {
				return 0, fmt.Errorf("step %q is not a number from 1 to %d", stepText, hi-lo+1)
			}
			step = n
		}
		a, b, err := parseRange(rng, lo, hi, names, hasStep)
		if err != nil {
			return 0, err
		}
		for v := a; v <= b; v += step {
			set |= 1 << uint(v)
		}
	}
	return set, nil
}

func parseRange(r string, lo, hi int, names []string, hasStep bool) (int, int, error) {
	if r == "*" || r == "?" {
		return lo, hi, nil
	}
	as, bs, isRange := strings.Cut(r, "-")
	a, err := parseValue(as, lo, hi, names)
	if err != nil {
		return 0, 0, err
	}
	if !isRange {
		if hasStep {
			return a, hi, nil // "a/n": from a to the end
		}
		return a, a, nil
	}
	b, err := parseValue(bs, lo, hi, names)
	if err != nil {
		return 0, 0, err
	}
	if b < a {
		return 0, 0, fmt.Errorf("range %q ends before it starts", r)
	}
	return a, b, nil
}

func parseValue(v string, lo, hi int, names []string) (int, error) {
	for i, n := range names {
		if n != "" && strings.EqualFold(v, n) {
			return i, nil
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%q is not a value from %d to %d", v, lo, hi)
	}
	return n, nil
}

// Next returns the first time the spec fires strictly after t, or the
// zero time when there is none within nine years.
func (s *Spec) Next(t time.Time) time.Time {
	if s.every > 0 {
		n := t.UnixNano()
		d := s.every.Nanoseconds()
		next := (n/d + 1) * d
		if n < 0 && n%d != 0 {
			next = (n / d) * d
		}
		return time.Unix(0, next).In(s.loc)
	}
	w := t.In(s.loc)
	y, mo, d := w.Date()
	day := time.Date(y, mo, d, 0, 0, 0, 0, time.UTC) // the wall-clock date, as a calendar
	first := true
	for range maxYears * 366 {
		if s.matchesDay(day) {
			if f, ok := s.firstOnDay(day, w, first, t); ok {
				return f
			}
		}
		day = day.AddDate(0, 0, 1)
		first = false
	}
	return time.Time{}
}

func (s *Spec) matchesDay(day time.Time) bool {
	if s.month&(1<<uint(day.Month())) == 0 {
		return false
	}
	domOK := s.dom&(1<<uint(day.Day())) != 0
	dowOK := s.dow&(1<<uint(day.Weekday())) != 0
	if !s.domStar && !s.dowStar {
		return domOK || dowOK
	}
	return domOK && dowOK
}

// firstOnDay returns the first firing on the calendar day after t. On t's
// own day (first), wall-clock times before t's are passed over: they
// resolve to instants no later than t.
func (s *Spec) firstOnDay(day, w time.Time, first bool, t time.Time) (time.Time, bool) {
	for h := range bitsOf(s.hour) {
		if first && h < w.Hour() {
			continue
		}
		for m := range bitsOf(s.min) {
			if first && h == w.Hour() && m < w.Minute() {
				continue
			}
			for sec := range bitsOf(s.sec) {
				if first && h == w.Hour() && m == w.Minute() && sec < w.Second() {
					continue
				}
				if at, ok := s.resolve(day.Year(), day.Month(), day.Day(), h, m, sec); ok && at.After(t) {
					return at, true
				}
			}
		}
	}
	return time.Time{}, false
}

// resolve returns the first instant whose wall clock in the spec's zone
// is the given one; false when the zone skips it.
func (s *Spec) resolve(y int, mo time.Month, d, h, m, sec int) (time.Time, bool) {
	same := func(c time.Time) bool {
		cy, cmo, cd := c.Date()
		return cy == y && cmo == mo && cd == d && c.Hour() == h && c.Minute() == m && c.Second() == sec
	}
	at := time.Date(y, mo, d, h, m, sec, 0, s.loc)
	wall := time.Date(y, mo, d, h, m, sec, 0, time.UTC)
	var best time.Time
	// The wall time read with the offsets in force half a day either side:
	// a zone changes its offset at most once in that span.
	for _, probe := range []time.Time{at.Add(-12 * time.Hour), at, at.Add(12 * time.Hour)} {
		_, off := probe.Zone()
		c := wall.Add(-time.Duration(off) * time.Second).In(s.loc)
		if same(c) && (best.IsZero() || c.Before(best)) {
			best = c
		}
	}
	return best, !best.IsZero()
}

// bitsOf yields the members of a bit set in increasing order.
func bitsOf(set uint64) func(func(int) bool) {
	return func(yield func(int) bool) {
		for set != 0 {
			b := bits.TrailingZeros64(set)
			if !yield(b) {
				return
			}
			set &^= 1 << uint(b)
		}
	}
}

// Location is the spec's time zone.
func (s *Spec) Location() *time.Location { return s.loc }
