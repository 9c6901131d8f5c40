package e2e

import "testing"

// TestBinary runs every feature against the built agentrunner, started as
// a process on loopback ports. cmd/agentrunner's TestE2EInProcess runs the
// same features in-process.
func TestBinary(t *testing.T) {
	if !Wants("binary") {
		t.Skipf("%s=%s", EnvModes, "inprocess")
	}
	Run(t, BuildBinary(t, t.TempDir()))
}
