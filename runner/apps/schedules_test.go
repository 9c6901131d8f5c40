package apps

import (
	"context"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
)

const scheduledDoc = `apps:
  - name: digest
    root_agent: { name: r, llm: { model: offline } }
    schedules:
      - name: daily
        cron: "0 8 * * mon-fri"
        time_zone: Europe/Paris
        user_id: ops
        message: Write the daily digest.
        missed_policy: MISSED_POLICY_RUN_ONCE
      - name: tick
        cron: "@every 30s"
        user_id: ops
        session_id: ticks
        message: tick
        paused: true
`

// TestParseSchedules: an app's schedules reach the app with their ids.
func TestParseSchedules(t *testing.T) {
	cfg, err := Parse("apps.yaml", []byte(scheduledDoc))
	if err != nil {
		t.Fatal(err)
	}
	built, err := Build(context.Background(), cfg, func(context.Context, string) (model.Model, error) {
		return offline.New(offline.Config{}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := built[0].Schedules
	if len(got) != 2 || got[0].GetScheduleId() != "digest/daily" || got[0].GetTimeZone() != "Europe/Paris" ||
		got[0].GetMissedPolicy() != agentrunnerv1.MissedPolicy_MISSED_POLICY_RUN_ONCE || got[1].GetSessionId() != "ticks" || !got[1].GetPaused() || got[0].GetPaused() ||
		got[0].GetSource() != agentrunnerv1.ScheduleSource_SCHEDULE_SOURCE_APPS_FILE || got[1].GetNewMessage().GetParts()[0].GetText() != "tick" {
		t.Fatalf("schedules: %v", got)
	}
}

// TestParseScheduleErrors: every problem of the schedules is reported, at
// its line.
func TestParseScheduleErrors(t *testing.T) {
	doc := `apps:
  - name: digest
    root_agent: { name: r, llm: { model: offline } }
    schedules:
      - name: daily
        cron: "0 8 * *"
        user_id: ops
        message: m
      - name: daily
        cron: "@daily"
        time_zone: Mars/Base
        message: m
      - name: "bad name"
        cron: "* * * * *"
        user_id: ops
`
	_, err := Parse("apps.yaml", []byte(doc))
	if err == nil {
		t.Fatal("parsed")
	}
	for _, want := range []string{
		"apps.yaml:6", "apps[0].schedules[0].cron", "4 fields",
		"duplicate schedule name", "apps[0].schedules[1].time_zone", "apps[0].schedules[1].user_id",
		"apps[0].schedules[2].name", "apps[0].schedules[2].message",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestReloadSchedules: a reload replaces an app's schedules with its new
// entry's, and a removed app's schedules go with it.
func TestReloadSchedules(t *testing.T) {
	_, db := newRegistry(t, nil)
	reg := mustRegistry(t, Config{Store: db})
	sched := func(app, name string) *agentrunnerv1.Schedule {
		return &agentrunnerv1.Schedule{ScheduleId: app + "/" + name, AppName: app}
	}
	app := func(name string, scheds ...*agentrunnerv1.Schedule) App {
		return App{Name: name, Root: mustAgent(t, "solo"), Schedules: scheds}
	}
	if _, err := reg.Register(app("a", sched("a", "one"))); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(app("b", sched("b", "x"))); err != nil {
		t.Fatal(err)
	}
	ids := func() string {
		var out []string
		for _, s := range reg.Schedules() {
			out = append(out, s.GetScheduleId())
		}
		return strings.Join(out, ",")
	}
	if got := ids(); got != "a/one,b/x" {
		t.Fatalf("schedules %s", got)
	}
	if _, err := reg.Reload([]App{app("a", sched("a", "two"), sched("a", "three"))}); err != nil {
		t.Fatal(err)
	}
	if got := ids(); got != "a/three,a/two" {
		t.Fatalf("schedules after reload %s", got)
	}
}
