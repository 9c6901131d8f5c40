package runner

import (
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/live"
)

// Update is one element of a run stream. Exactly one field is set: Run
// for the run record (the first element and the last, with the final
// status), Event for a partial or complete event, Err for an agent's
// error that is reported in-band (an *agent.AgentError), after which the
// run goes on. A reader owns the events it gets; the final record is
// shared by every reader of the run and must not be changed.
type Update struct {
	Run   *agentrunnerv1.Run
	Event *agentrunnerv1.Event
	Err   error
}

// liveYield is yield as the live runs and the replicas hand updates out:
// their Update has the same fields, so that each update is converted,
// not copied or allocated; only the function is made once per stream.
func liveYield(yield func(Update, error) bool) func(live.Update, error) bool {
	return func(u live.Update, err error) bool { return yield(Update(u), err) }
}
