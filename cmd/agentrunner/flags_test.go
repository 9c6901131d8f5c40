package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagsAfterArguments checks that the client commands take their
// flags after their arguments as well as before, against a real server:
// `sessions show t1 --app support` once read --app as a second argument.
func TestFlagsAfterArguments(t *testing.T) {
	addr, _, sc := runsServer(t, filepath.Join(t.TempDir(), "data.db"), "")
	createSession(t, sc, "support", "t1")
	for _, args := range [][]string{
		{"sessions", "show", "t1", "--app", "support", "--user", "u", "--addr", addr},
		{"sessions", "show", "--app", "support", "t1", "--user", "u", "--addr", addr},
		{"sessions", "list", "--addr", addr, "--app", "support", "--user", "u"},
	} {
		var out, errOut strings.Builder
		err := run(t.Context(), args, strings.NewReader(""), &out, &errOut)
		if code := exitCode(err, &errOut); code != 0 {
			t.Errorf("%q exited %d: %s", args, code, errOut.String())
			continue
		}
		if !strings.Contains(out.String(), "t1") {
			t.Errorf("%q printed no session t1:\n%s", args, out.String())
		}
	}
	// A deletion with the flags last deletes the session named first.
	var out strings.Builder
	if err := run(t.Context(), []string{"sessions", "delete", "t1", "--app", "support", "--user", "u", "--addr", addr}, nil, &out, io.Discard); err != nil {
		t.Fatalf("sessions delete t1 --app support: %v", err)
	}
	if !strings.Contains(out.String(), "deleted session t1") {
		t.Errorf("sessions delete printed %q", out.String())
	}
}

// TestStrayArgumentsNamed checks that a command that takes no arguments
// names the stray one, wherever the flags are, and exits 2.
func TestStrayArgumentsNamed(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "extra", "--addr", "127.0.0.1:0"},
		{"migrate", "extra", "--data", filepath.Join(t.TempDir(), "x.db")},
		{"certs", "extra", "--dir", t.TempDir()},
		{"chat", "extra", "--app", "demo"},
	} {
		var errOut strings.Builder
		err := run(t.Context(), args, strings.NewReader(""), io.Discard, &errOut)
		if code := exitCode(err, &errOut); code != 2 || !strings.Contains(errOut.String(), `"extra"`) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and the stray argument named", args, code, errOut.String())
		}
	}
}
