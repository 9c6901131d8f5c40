package server

import (
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
)

// RunnerApps serves the apps registered in a runner.Apps registry.
func RunnerApps(a *runner.Apps) Apps { return runnerApps{a} }

type runnerApps struct{ apps *runner.Apps }

func (r runnerApps) Lookup(name string) (AppRunner, bool) {
	rn, ok := r.apps.Lookup(name)
	if !ok {
		// Not rn itself: a nil *runner.Runner in an interface is not nil.
		return nil, false
	}
	return rn, true
}

func (r runnerApps) List() []*agentrunnerv1.App { return r.apps.List() }
