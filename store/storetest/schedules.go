package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// RunSchedules runs the schedule store tests against stores made by
// open, which must implement store.ScheduleStore.
func RunSchedules(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.ScheduleStore)
	}{
		{"Definitions", testScheduleDefinitions},
		{"ClaimOnce", testScheduleClaimOnce},
		{"ClaimRace", testScheduleClaimRace},
		{"Arguments", testScheduleArguments},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			ss, ok := s.(store.ScheduleStore)
			if !ok {
				t.Fatalf("%T does not implement store.ScheduleStore", s)
			}
			tc.fn(t, ss)
		})
	}
}

func testSchedule(id, app string) *agentrunnerv1.Schedule {
	return &agentrunnerv1.Schedule{
		ScheduleId: id, AppName: app, Cron: "@every 1s", UserId: "owner",
		NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "tick"}}}},
		Source:     agentrunnerv1.ScheduleSource_SCHEDULE_SOURCE_API,
	}
}

// testScheduleDefinitions: create, get, list by app in id order, refuse a
// taken id, delete with the state and claims.
func testScheduleDefinitions(t *testing.T, s store.ScheduleStore) {
	ctx := t.Context()
	for _, sc := range []*agentrunnerv1.Schedule{testSchedule("b", "app1"), testSchedule("a", "app1"), testSchedule("c", "app2")} {
		if err := s.CreateSchedule(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateSchedule(ctx, testSchedule("a", "app2")); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("create a taken id: %v, want ErrAlreadyExists", err)
	}
	got, err := s.GetSchedule(ctx, "a")
	if err != nil || !proto.Equal(got, testSchedule("a", "app1")) {
		t.Fatalf("get: %v, %v", got, err)
	}
	list, err := s.ListSchedules(ctx, "app1")
	if err != nil || len(list) != 2 || list[0].GetScheduleId() != "a" || list[1].GetScheduleId() != "b" {
		t.Fatalf("list app1: %v, %v", list, err)
	}
	if all, err := s.ListSchedules(ctx, ""); err != nil || len(all) != 3 {
		t.Fatalf("list all: %d, %v", len(all), err)
	}
	if p, err := s.SetSchedulePaused(ctx, "b", true); err != nil || !p.GetPaused() || p.GetCron() != "@every 1s" {
		t.Fatalf("pause: %v, %v", p, err)
	}
	if got, err := s.GetSchedule(ctx, "b"); err != nil || !got.GetPaused() {
		t.Fatalf("get paused: %v, %v", got, err)
	}
	if p, err := s.SetSchedulePaused(ctx, "b", false); err != nil || p.GetPaused() {
		t.Fatalf("resume: %v, %v", p, err)
	}
	if _, err := s.SetSchedulePaused(ctx, "nope", true); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("pause a missing schedule: %v", err)
	}
	at := time.Unix(1_800_000_000, 0).UTC()
	if err := s.ClaimFire(ctx, "a", at, "r1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSchedule(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSchedule(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
	if _, err := s.ScheduleState(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("state of deleted: %v", err)
	}
	if fires, err := s.ListFires(ctx, "a", 10); err != nil || len(fires) != 0 {
		t.Fatalf("fires of deleted: %v, %v", fires, err)
	}
	if err := s.DeleteSchedule(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if l, err := s.ListSchedules(ctx, "app1"); err != nil || len(l) != 1 {
		t.Fatalf("list after delete: %d, %v", len(l), err)
	}
}

// testScheduleClaimOnce: the cursor starts once, a time claims once, a
// time at or before the cursor is refused, a skip moves the cursor
// forward only, and the outcome lands on the claim and the state.
func testScheduleClaimOnce(t *testing.T, s store.ScheduleStore) {
	ctx := t.Context()
	base := time.Unix(1_800_000_000, 0).UTC()
	c, err := s.StartSchedule(ctx, "app/daily", base)
	if err != nil || !c.Equal(base) {
		t.Fatalf("start: %s, %v", c, err)
	}
	if c, err := s.StartSchedule(ctx, "app/daily", base.Add(time.Hour)); err != nil || !c.Equal(base) {
		t.Fatalf("second start moved the cursor: %s, %v", c, err)
	}
	if err := s.ClaimFire(ctx, "app/daily", base, "r1"); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("claim at the cursor: %v", err)
	}
	t1 := base.Add(time.Second)
	if err := s.ClaimFire(ctx, "app/daily", t1, "r1"); err != nil {
		t.Fatal(err)
	}
	if err := s.ClaimFire(ctx, "app/daily", t1, "r2"); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("second claim of a time: %v", err)
	}
	st, err := s.ScheduleState(ctx, "app/daily")
	if err != nil || !st.Cursor.Equal(t1) || !st.Last.Time.Equal(t1) || st.Last.Holder != "r1" || st.Last.Finished {
		t.Fatalf("state after claim: %+v, %v", st, err)
	}
	if err := s.FinishFire(ctx, "app/daily", t1, "run-1", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishFire(ctx, "app/daily", base.Add(5*time.Second), "run-x", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("finish an unclaimed time: %v", err)
	}
	if err := s.SkipTo(ctx, "app/daily", base.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.SkipTo(ctx, "app/daily", base.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	st, err = s.ScheduleState(ctx, "app/daily")
	if err != nil || !st.Cursor.Equal(base.Add(10*time.Second)) || st.Last.RunID != "run-1" || !st.Last.Finished {
		t.Fatalf("state after skip: %+v, %v", st, err)
	}
	if err := s.ClaimFire(ctx, "app/daily", base.Add(7*time.Second), "r1"); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("claim of a skipped time: %v", err)
	}
	t2 := base.Add(11 * time.Second)
	if err := s.ClaimFire(ctx, "app/daily", t2, "r2"); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishFire(ctx, "app/daily", t2, "", "budget exhausted"); err != nil {
		t.Fatal(err)
	}
	fires, err := s.ListFires(ctx, "app/daily", 10)
	if err != nil || len(fires) != 2 || !fires[0].Time.Equal(t2) || fires[0].Error != "budget exhausted" || fires[1].RunID != "run-1" {
		t.Fatalf("fires: %+v, %v", fires, err)
	}
	if fires, err := s.ListFires(ctx, "app/daily", 1); err != nil || len(fires) != 1 {
		t.Fatalf("fires limited to 1: %d, %v", len(fires), err)
	}
	if fires, err := s.ListFires(ctx, "app/dail", 10); err != nil || len(fires) != 0 {
		t.Fatalf("fires of an id that is a prefix: %d, %v", len(fires), err)
	}
	// A claim without a cursor makes one.
	if err := s.ClaimFire(ctx, "app/new", t2, "r1"); err != nil {
		t.Fatal(err)
	}
}

// testScheduleClaimRace: of many claimers of the same times, one wins
// each time.
func testScheduleClaimRace(t *testing.T, s store.ScheduleStore) {
	ctx := t.Context()
	base := time.Unix(1_800_000_000, 0).UTC()
	if _, err := s.StartSchedule(ctx, "race", base); err != nil {
		t.Fatal(err)
	}
	const claimers, times = 4, 20
	wins := make([]int, times)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range claimers {
		wg.Go(func() {
			for i := range times {
				err := s.ClaimFire(ctx, "race", base.Add(time.Duration(i+1)*time.Second), string(rune('a'+c)))
				switch {
				case err == nil:
					mu.Lock()
					wins[i]++
					mu.Unlock()
				case !errors.Is(err, store.ErrAlreadyExists):
					t.Errorf("claim: %v", err)
				}
			}
		})
	}
	wg.Wait()
	for i, n := range wins {
		if n != 1 {
			t.Errorf("time %d claimed %d times, want once", i+1, n)
		}
	}
}

func testScheduleArguments(t *testing.T, s store.ScheduleStore) {
	ctx := t.Context()
	if err := s.CreateSchedule(ctx, testSchedule("", "app")); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("empty id: %v", err)
	}
	if err := s.CreateSchedule(ctx, testSchedule("x", "")); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("empty app: %v", err)
	}
	if _, err := s.GetSchedule(ctx, ""); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("get empty id: %v", err)
	}
	if err := s.ClaimFire(ctx, "", time.Unix(1, 0), "r"); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("claim empty id: %v", err)
	}
	if _, err := s.ScheduleState(ctx, "none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("state of none: %v", err)
	}
}
