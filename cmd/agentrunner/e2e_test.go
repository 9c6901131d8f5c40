package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/e2e"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// inProcess is the e2e Target of a server in this test binary: run, as
// main calls it, on a context that stopping cancels, as SIGTERM does.
type inProcess struct{}

// servedConsole reads the HTTP listener's URL from the serving line.
var servedConsole = regexp.MustCompile(`msg=serving .*console=(\S+)`)

func (inProcess) Serve(t *testing.T, args ...string) *e2e.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr, exited, logs := startRun(t, ctx, append(e2e.ServeFlags()[1:], args...)...)
	stop := func() error {
		cancel()
		return <-exited
	}
	var http string
	if m := servedConsole.FindStringSubmatch(logs.String()); m != nil {
		http = strings.Trim(m[1], `"`)
	}
	return e2e.NewServer(t, addr, http, stop, logs.String)
}

func (inProcess) CLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut strings.Builder
	err := run(t.Context(), args, strings.NewReader(""), &out, &errOut)
	code = exitCode(err, &errOut) // it prints the error, as main does
	return out.String(), errOut.String(), code
}

// TestE2EInProcess runs the e2e features against servers in this
// process; the e2e package's TestBinary runs them against the binary.
func TestE2EInProcess(t *testing.T) {
	if !e2e.Wants("inprocess") {
		t.Skipf("%s=binary", e2e.EnvModes)
	}
	e2e.Run(t, inProcess{})
}

// Helpers of the tests that moved to e2e, which tests here still use.
func textOfEvent(ev *agentrunnerv1.Event) string { return e2e.TextOfEvent(ev) }

func rowOf(t *testing.T, table, id string) string { t.Helper(); return e2e.RowOf(t, table, id) }

func checkBudgetRefusal(t *testing.T, err error, budget, subject string) {
	t.Helper()
	e2e.CheckBudgetRefusal(t, err, budget, subject)
}

// costsConfig is e2e.CostsConfig, which tests here serve too.
const costsConfig = e2e.CostsConfig
