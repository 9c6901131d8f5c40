package apps

import (
	"fmt"
	"slices"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/schedule"
)

// validateSchedules checks an app's schedules: unique valid names, a
// cron expression and zone that parse, an owner and a message.
func validateSchedules(app *agentrunnerv1.AppConfig, path string, errs *errList) {
	names := map[string]int{}
	for i, c := range app.GetSchedules() {
		p := fmt.Sprintf("%s.schedules[%d]", path, i)
		if j, dup := names[c.GetName()]; dup {
			errs.add(&Error{Path: p + ".name", Msg: fmt.Sprintf("duplicate schedule name %q (also schedules[%d])", c.GetName(), j)})
		} else if err := schedule.CheckName(c.GetName()); err != nil {
			errs.add(&Error{Path: p + ".name", Msg: "schedule " + err.Error()})
		} else {
			names[c.GetName()] = i
		}
		for _, fe := range schedule.Check(schedule.FromConfig(cmpName(app), c)) {
			field := fe.Field
			if field == "new_message" {
				field = "message"
			}
			errs.add(&Error{Path: p + "." + field, Msg: fe.Msg})
		}
	}
}

// cmpName is the app's name, or a stand-in when it has none (reported
// apart), so that the schedules are still checked.
func cmpName(app *agentrunnerv1.AppConfig) string {
	if app.GetName() == "" {
		return "app"
	}
	return app.GetName()
}

// schedulesOf returns the schedules an app's entry defines.
func schedulesOf(app *agentrunnerv1.AppConfig) []*agentrunnerv1.Schedule {
	out := make([]*agentrunnerv1.Schedule, 0, len(app.GetSchedules()))
	for _, c := range app.GetSchedules() {
		out = append(out, schedule.FromConfig(app.GetName(), c))
	}
	return out
}

// Schedules returns the schedules of the apps served, as their apps
// file defines them, by id. Reload replaces an app's with its new
// entry's; a removed app's go with it.
func (g *Registry) Schedules() []*agentrunnerv1.Schedule {
	g.mu.RLock()
	var out []*agentrunnerv1.Schedule
	for name := range g.runners {
		out = append(out, g.schedules[name]...)
	}
	g.mu.RUnlock()
	slices.SortFunc(out, func(a, b *agentrunnerv1.Schedule) int { return strings.Compare(a.GetScheduleId(), b.GetScheduleId()) })
	return out
}
