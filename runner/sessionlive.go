package runner

import "github.com/agentrunner/agentrunner/store"

// SessionRunLive reports whether a run of session (userID, sessionID) of
// the runner's app is live in this process: running, or queued behind
// one, whether or not its record is stored yet. SessionService's
// RewindSession refuses such a session, as it refuses one whose stored
// run records are active.
func (r *Runner) SessionRunLive(userID, sessionID string) bool {
	k := store.SessionKey{App: r.appName, User: userID, Session: sessionID}
	r.runs.mu.Lock()
	defer r.runs.mu.Unlock()
	return r.runs.sessions[k].busy()
}
