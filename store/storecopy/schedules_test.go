package storecopy_test

import (
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store/storecopy"
	"github.com/agentrunner/agentrunner/store/storecopy/copytest"
)

// TestCopySchedules: API schedules go from bbolt to PostgreSQL with their
// cursors, so the target fires none of the times the source decided; a
// resumed copy writes none twice.
func TestCopySchedules(t *testing.T) {
	ctx := t.Context()
	src := openBolt(t, filepath.Join(t.TempDir(), "src.db"))
	copytest.Fill(t, src, 2, 1)
	sc := &agentrunnerv1.Schedule{ScheduleId: "sch-a", AppName: "app", UserId: "u", Cron: "@hourly",
		Source: agentrunnerv1.ScheduleSource_SCHEDULE_SOURCE_API}
	if err := src.CreateSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	fired := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	if err := src.ClaimFire(ctx, "sch-a", fired, "r1"); err != nil {
		t.Fatal(err)
	}
	dst := openPG(t, pg.URL(t))
	if rep := copyAll(t, src, dst, storecopy.Options{}); rep.Schedules != 1 {
		t.Fatalf("report: %+v", rep)
	}
	got, err := dst.GetSchedule(ctx, "sch-a")
	if err != nil || !proto.Equal(got, sc) {
		t.Fatalf("schedule in the target: %v, %v", got, err)
	}
	if st, err := dst.ScheduleState(ctx, "sch-a"); err != nil || !st.Cursor.Equal(fired) {
		t.Fatalf("cursor in the target: %+v, %v", st, err)
	}
	if rep := copyAll(t, src, dst, storecopy.Options{Resume: true}); rep.Schedules != 0 {
		t.Fatalf("resumed copy: %+v", rep)
	}
}
