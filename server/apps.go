package server

import (
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/apps"
)

// RunnerApps serves the apps registered in an apps.Registry.
func RunnerApps(a *apps.Registry) Apps { return runnerApps{a} }

type runnerApps struct{ apps *apps.Registry }

func (r runnerApps) Lookup(name string) (AppRunner, bool) {
	rn, ok := r.apps.Lookup(name)
	if !ok {
		// Not rn itself: a nil *runner.Runner in an interface is not nil.
		return nil, false
	}
	return rn, true
}

func (r runnerApps) List() []*agentrunnerv1.App { return r.apps.List() }

// Schedules are the apps file's schedules of the apps served.
func (r runnerApps) Schedules() []*agentrunnerv1.Schedule { return r.apps.Schedules() }
