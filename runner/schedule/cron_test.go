package schedule

import (
	"strings"
	"testing"
	"time"
)

func mustTime(t *testing.T, loc *time.Location, s string) time.Time {
	t.Helper()
	at, err := time.ParseInLocation("2006-01-02 15:04:05", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func TestNext(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		expr, tz, after string
		want            []string // successive times, in the zone
	}{
		{"* * * * *", "", "2026-01-01 00:00:00", []string{"2026-01-01 00:01:00", "2026-01-01 00:02:00"}},
		{"* * * * * *", "", "2026-01-01 23:59:58", []string{"2026-01-01 23:59:59", "2026-01-02 00:00:00"}},
		{"*/15 * * * *", "", "2026-01-01 00:14:59", []string{"2026-01-01 00:15:00", "2026-01-01 00:30:00", "2026-01-01 00:45:00", "2026-01-01 01:00:00"}},
		{"30 9 * * mon-fri", "", "2026-11-27 10:00:00", []string{"2026-11-30 09:30:00", "2026-12-01 09:30:00"}}, // Friday, then Monday
		{"0 0 1 jan,jul *", "", "2026-03-01 00:00:00", []string{"2026-07-01 00:00:00", "2027-01-01 00:00:00"}},
		{"0 0 13 * fri", "", "2026-01-01 00:00:00", []string{"2026-01-02 00:00:00", "2026-01-09 00:00:00", "2026-01-13 00:00:00"}}, // either day rule
		{"0 0 29 2 *", "", "2026-01-01 00:00:00", []string{"2028-02-29 00:00:00", "2032-02-29 00:00:00"}},
		{"0 12 * * 7", "", "2026-11-28 00:00:00", []string{"2026-11-29 12:00:00"}}, // 7 is Sunday
		{"5/20 * * * *", "", "2026-01-01 00:00:00", []string{"2026-01-01 00:05:00", "2026-01-01 00:25:00", "2026-01-01 00:45:00", "2026-01-01 01:05:00"}},
		{"10-12 0 * * *", "", "2026-01-01 00:11:30", []string{"2026-01-01 00:12:00", "2026-01-02 00:10:00"}},
		{"@hourly", "", "2026-01-01 00:00:00", []string{"2026-01-01 01:00:00"}},
		{"@daily", "Europe/Paris", "2026-01-01 12:00:00", []string{"2026-01-02 00:00:00"}},
		{"@weekly", "", "2026-11-28 00:00:00", []string{"2026-11-29 00:00:00"}},
		{"@monthly", "", "2026-11-28 00:00:00", []string{"2026-12-01 00:00:00"}},
		{"@yearly", "", "2026-11-28 00:00:00", []string{"2027-01-01 00:00:00"}},
		{"@every 1s", "", "2026-01-01 00:00:00", []string{"2026-01-01 00:00:01", "2026-01-01 00:00:02"}},
		{"@every 1h30m", "", "2026-01-01 00:00:00", []string{"2026-01-01 01:30:00", "2026-01-01 03:00:00"}},
		// Spring forward in New York: 02:30 on 2026-03-08 does not exist.
		{"30 2 * * *", "America/New_York", "2026-03-07 03:00:00", []string{"2026-03-09 02:30:00"}},
		{"*/30 * * * *", "America/New_York", "2026-03-08 01:15:00", []string{"2026-03-08 01:30:00", "2026-03-08 03:00:00", "2026-03-08 03:30:00"}},
		// Fall back: 01:30 on 2026-11-01 happens twice and fires once.
		{"30 1 * * *", "America/New_York", "2026-10-31 12:00:00", []string{"2026-11-01 01:30:00", "2026-11-02 01:30:00"}},
	} {
		t.Run(tc.expr+"/"+tc.tz, func(t *testing.T) {
			s, err := Parse(tc.expr, tc.tz)
			if err != nil {
				t.Fatal(err)
			}
			at := mustTime(t, s.Location(), tc.after)
			for _, w := range tc.want {
				got := s.Next(at)
				if want := mustTime(t, s.Location(), w); !got.Equal(want) {
					t.Fatalf("Next(%s) = %s, want %s", at, got, want)
				}
				at = got
			}
		})
	}
	// Fall back, counted in instants: every ten minutes through the night
	// of 2026-11-01 fires 6 times an hour of wall clock, the repeated hour
	// once: 0:00 to 3:50 local is 24 firings over 5 real hours.
	s, err := Parse("*/10 * * * *", "America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	from, to := mustTime(t, ny, "2026-10-31 23:55:00"), mustTime(t, ny, "2026-11-01 03:55:00")
	n := 0
	seen := map[string]bool{}
	for at := s.Next(from); at.Before(to); at = s.Next(at) {
		wall := at.Format("15:04")
		if seen[wall] {
			t.Errorf("wall time %s fired twice (%s)", wall, at)
		}
		seen[wall] = true
		n++
	}
	if n != 24 {
		t.Errorf("fired %d times, want 24", n)
	}
}

// TestNextFromSecondPass: a time taken in the repeated hour's second pass
// does not fire again the wall times the first pass fired.
func TestNextFromSecondPass(t *testing.T) {
	s, err := Parse("*/10 * * * *", "America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	// 2026-11-01 05:45 UTC is 01:45 EDT (first pass); 06:45 UTC is 01:45 EST.
	second := time.Date(2026, 11, 1, 6, 45, 0, 0, time.UTC)
	got := s.Next(second)
	if want := time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next(%s) = %s, want %s (02:00 EST)", second, got.UTC(), want)
	}
	first := time.Date(2026, 11, 1, 5, 45, 0, 0, time.UTC)
	if got, want := s.Next(first), time.Date(2026, 11, 1, 5, 50, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next(%s) = %s, want %s", first, got.UTC(), want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ expr, tz, want string }{
		{"", "", "0 fields"},
		{"* * * *", "", "4 fields"},
		{"* * * * * * *", "", "7 fields"},
		{"60 * * * *", "", "minutes field"},
		{"* 24 * * *", "", "hours field"},
		{"* * 0 * *", "", "day-of-month field"},
		{"* * * 13 *", "", "month field"},
		{"* * * * 8", "", "day-of-week field"},
		{"*/0 * * * *", "", "step"},
		{"5-1 * * * *", "", "ends before"},
		{"a * * * *", "", "not a value"},
		{"0 0 30 2 *", "", "never fire"},
		{"@sometimes", "", "unknown descriptor"},
		{"@every 500ms", "", "whole number of seconds"},
		{"@every x", "", "@every"},
		{"* * * * *", "Mars/Olympus", "time zone"},
		{"* * * * *", "Local", "IANA"},
	} {
		_, err := Parse(tc.expr, tc.tz)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %q) = %v, want an error containing %q", tc.expr, tc.tz, err, tc.want)
		}
	}
}

func FuzzNext(f *testing.F) {
	for _, s := range []string{"* * * * *", "*/7 3-5 1,15 * mon", "0 0 29 2 *", "@every 3s", "@daily", "1-59/2 * * * * *"} {
		f.Add(s, "America/New_York", int64(1_700_000_000))
	}
	f.Fuzz(func(t *testing.T, expr, tz string, unix int64) {
		s, err := Parse(expr, tz)
		if err != nil {
			return
		}
		at := time.Unix(unix%(1<<34), 0)
		for range 3 {
			next := s.Next(at)
			if next.IsZero() {
				return
			}
			if !next.After(at) {
				t.Fatalf("%q in %q: Next(%s) = %s, not after it", expr, tz, at, next)
			}
			at = next
		}
	})
}
