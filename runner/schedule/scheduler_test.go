package schedule_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/schedule"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// clock is the tests' injectable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time)     { c.mu.Lock(); c.now = t; c.mu.Unlock() }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// fires records the times FireFunc was called with.
type fires struct {
	mu     sync.Mutex
	times  map[string][]time.Time // by schedule id
	refuse error
}

func (f *fires) fire(_ context.Context, sc *agentrunnerv1.Schedule, at time.Time) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.times == nil {
		f.times = map[string][]time.Time{}
	}
	f.times[sc.GetScheduleId()] = append(f.times[sc.GetScheduleId()], at)
	if f.refuse != nil {
		return "", f.refuse
	}
	_, req := schedule.RunIDs(sc, at)
	return "run-" + req, nil
}

func (f *fires) of(id string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.times[id]...)
}

func openStore(t *testing.T) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func sched(id, cron string, policy agentrunnerv1.MissedPolicy) *agentrunnerv1.Schedule {
	return &agentrunnerv1.Schedule{ScheduleId: id, AppName: "app", Cron: cron, UserId: "u", MissedPolicy: policy,
		NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "go"}}}}}
}

func newScheduler(st store.ScheduleStore, c *clock, f *fires, holder string, scs ...*agentrunnerv1.Schedule) *schedule.Scheduler {
	return schedule.New(schedule.Config{
		Store:     st,
		Schedules: func(context.Context) ([]*agentrunnerv1.Schedule, error) { return scs, nil },
		Fire:      f.fire, Holder: holder, Now: c.Now, CatchUp: 10 * time.Second,
		Logger: slog.New(slog.DiscardHandler),
	})
}

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// TestTwoSchedulersFireEachTimeOnce: two schedulers on one store, stepping
// in turns and together at every half second for a minute, fire each
// second once, and nothing before the first sight.
func TestTwoSchedulersFireEachTimeOnce(t *testing.T) {
	st := openStore(t)
	c := &clock{now: t0}
	f := &fires{}
	sc := sched("every-second", "* * * * * *", agentrunnerv1.MissedPolicy_MISSED_POLICY_SKIP)
	a, b := newScheduler(st, c, f, "a", sc), newScheduler(st, c, f, "b", sc)
	ctx := t.Context()
	for i := range 120 {
		c.Add(500 * time.Millisecond)
		var wg sync.WaitGroup
		for j, s := range []*schedule.Scheduler{a, b} {
			if (i+j)%3 == 0 {
				continue // now and then only one steps
			}
			wg.Go(func() {
				if err := s.Step(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	got := f.of("every-second")
	if len(got) != 60 {
		t.Fatalf("fired %d times, want 60", len(got))
	}
	seen := map[time.Time]bool{}
	for _, at := range got {
		if seen[at] || !at.After(t0) || at.After(t0.Add(time.Minute)) {
			t.Errorf("time %s fired twice or out of the window", at)
		}
		seen[at] = true
	}
	state, err := st.ScheduleState(ctx, "every-second")
	if err != nil || !state.Last.Time.Equal(t0.Add(time.Minute)) || !state.Last.Finished || state.Last.RunID == "" {
		t.Fatalf("state: %+v, %v", state, err)
	}
}

// TestMissedPolicies: after a downtime of an hour, a skip schedule fires
// none of the missed times and a run-once schedule the latest of them
// once; both fire the times within the catch-up window, and go on.
func TestMissedPolicies(t *testing.T) {
	st := openStore(t)
	c := &clock{now: t0}
	f := &fires{}
	skip := sched("skip", "*/5 * * * * *", agentrunnerv1.MissedPolicy_MISSED_POLICY_SKIP)
	once := sched("once", "*/5 * * * * *", agentrunnerv1.MissedPolicy_MISSED_POLICY_RUN_ONCE)
	s := newScheduler(st, c, f, "a", skip, once)
	ctx := t.Context()
	if err := s.Step(ctx); err != nil { // first sight: the cursors start at t0
		t.Fatal(err)
	}
	c.Add(5 * time.Second)
	if err := s.Step(ctx); err != nil {
		t.Fatal(err)
	}
	// Down for an hour: t0+5s fired, then nothing until t0+1h+3s.
	c.Set(t0.Add(time.Hour + 3*time.Second))
	if err := s.Step(ctx); err != nil {
		t.Fatal(err)
	}
	// The catch-up window is (t0+1h-7s, t0+1h+3s]: t0+1h-5s and t0+1h are
	// due; t0+1h-10s is the latest missed.
	due := []time.Time{t0.Add(time.Hour - 5*time.Second), t0.Add(time.Hour)}
	want := map[string][]time.Time{
		"skip": append([]time.Time{t0.Add(5 * time.Second)}, due...),
		"once": append([]time.Time{t0.Add(5 * time.Second), t0.Add(time.Hour - 10*time.Second)}, due...),
	}
	for id, w := range want {
		if got := f.of(id); !equalTimes(got, w) {
			t.Errorf("%s fired %v, want %v", id, got, w)
		}
	}
	c.Add(5 * time.Second)
	if err := s.Step(ctx); err != nil {
		t.Fatal(err)
	}
	for id := range want {
		got := f.of(id)
		if last := got[len(got)-1]; !last.Equal(t0.Add(time.Hour + 5*time.Second)) {
			t.Errorf("%s after the downtime: last fired %s", id, last)
		}
	}
}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// TestRefusedFireRecordedNotRetried: a firing the admission refuses is
// recorded as the schedule's last error, and the time is not fired again.
func TestRefusedFireRecordedNotRetried(t *testing.T) {
	st := openStore(t)
	c := &clock{now: t0}
	f := &fires{refuse: errors.New("budget exhausted")}
	s := newScheduler(st, c, f, "a", sched("refused", "* * * * * *", 0))
	ctx := t.Context()
	_ = s.Step(ctx)
	c.Add(time.Second)
	for range 5 {
		if err := s.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.of("refused"); len(got) != 1 {
		t.Fatalf("fired %d times, want 1", len(got))
	}
	state, err := st.ScheduleState(ctx, "refused")
	if err != nil || state.Last.Error != "budget exhausted" || state.Last.RunID != "" || !state.Last.Finished {
		t.Fatalf("state: %+v, %v", state, err)
	}
}

// TestRecoverUnfinishedClaim: a time claimed by a replica that died
// before recording its run is fired again by another, once the claim is
// old enough.
func TestRecoverUnfinishedClaim(t *testing.T) {
	st := openStore(t)
	c := &clock{now: t0}
	f := &fires{}
	sc := sched("crashed", "@every 1h", 0)
	ctx := t.Context()
	if _, err := st.StartSchedule(ctx, "crashed", t0.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	claimed := t0.Add(-time.Hour)
	if err := st.ClaimFire(ctx, "crashed", claimed, "dead"); err != nil {
		t.Fatal(err)
	}
	s := newScheduler(st, c, f, "a", sc)
	if err := s.Step(ctx); err != nil { // the first step looks for claims to recover
		t.Fatal(err)
	}
	if got := f.of("crashed"); len(got) != 2 || !got[0].Equal(claimed) || !got[1].Equal(t0) {
		t.Fatalf("fired %v, want the recovered %s and the due %s", got, claimed, t0)
	}
	fs, err := st.ListFires(ctx, "crashed", 10)
	if err != nil || len(fs) != 2 || !fs[1].Finished || fs[1].RunID == "" {
		t.Fatalf("claims: %+v, %v", fs, err)
	}
}

// TestErrorLoggedOnce: an error that lasts is logged once, not every
// step, and its end once.
func TestErrorLoggedOnce(t *testing.T) {
	var logs strings.Builder
	down := true
	s := schedule.New(schedule.Config{
		Store: openStore(t),
		Schedules: func(context.Context) ([]*agentrunnerv1.Schedule, error) {
			if down {
				return nil, errors.New("store unreachable")
			}
			return nil, nil
		},
		Fire: (&fires{}).fire, Holder: "a", Now: (&clock{now: t0}).Now,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	for range 3 {
		if err := s.Step(t.Context()); err == nil {
			t.Fatal("no error while the listing fails")
		}
	}
	down = false
	for range 2 {
		if err := s.Step(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if n, m := strings.Count(logs.String(), "schedule failing"), strings.Count(logs.String(), "works again"); n != 1 || m != 1 {
		t.Errorf("logged %d failures and %d recoveries, want 1 and 1:\n%s", n, m, logs.String())
	}
}

// TestPausedFiresNothing: a paused schedule fires nothing; resumed, the
// times it passed are missed ones, which its policy decides.
func TestPausedFiresNothing(t *testing.T) {
	st := openStore(t)
	c := &clock{now: t0}
	f := &fires{}
	sc := sched("paused", "*/5 * * * * *", agentrunnerv1.MissedPolicy_MISSED_POLICY_RUN_ONCE)
	s := newScheduler(st, c, f, "a", sc)
	ctx := t.Context()
	if err := s.Step(ctx); err != nil {
		t.Fatal(err)
	}
	sc.Paused = true
	for range 10 {
		c.Add(time.Minute)
		if err := s.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.of("paused"); len(got) != 0 {
		t.Fatalf("paused, fired %v", got)
	}
	sc.Paused = false
	c.Add(time.Second) // t0+10m1s: t0+10m is due, t0+9m50s the latest missed
	if err := s.Step(ctx); err != nil {
		t.Fatal(err)
	}
	want := []time.Time{t0.Add(10*time.Minute - 10*time.Second), t0.Add(10*time.Minute - 5*time.Second), t0.Add(10 * time.Minute)}
	if got := f.of("paused"); !equalTimes(got, want) {
		t.Fatalf("resumed, fired %v, want %v", got, want)
	}
}

// TestRunSurvivesAPanic: a step that panics (here, listing the schedules)
// is logged and the loop goes on to its next tick, instead of stopping
// the server whose goroutine runs it.
func TestRunSurvivesAPanic(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls := 0
	s := schedule.New(schedule.Config{
		Store: openStore(t),
		Schedules: func(context.Context) ([]*agentrunnerv1.Schedule, error) {
			calls++
			if calls == 1 {
				panic("a record no check foresaw")
			}
			cancel() // the second tick came: the loop lived on
			return nil, nil
		},
		Fire: (&fires{}).fire, Holder: "a", Tick: time.Millisecond, Logger: slog.New(slog.DiscardHandler),
	})
	s.Run(ctx)
	if calls < 2 {
		t.Fatalf("%d steps, want the loop to go on after the panic", calls)
	}
}
