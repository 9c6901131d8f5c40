package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		var out bytes.Buffer
		if err := run(t.Context(), []string{arg}, strings.NewReader(""), &out, io.Discard); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		if !regexp.MustCompile(`^agentrunner \S+\ncommit \S+.*\nbuilt \S+\ngo1\.\d+`).MatchString(out.String()) {
			t.Fatalf("%s printed %q", arg, out.String())
		}
	}
}

// TestVersionText checks where the commit comes from: make build's stamp,
// else go build's VCS settings, else a line that says how to get one.
func TestVersionText(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-20T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	bare := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	tests := []struct {
		name  string
		info  *debug.BuildInfo
		s     stamp
		goRun bool
		want  string
	}{
		{"make build", bare, stamp{"v0.3-2-gdef456", "def456", "2026-11-21T09:00:00Z", false}, false,
			"agentrunner v0.3-2-gdef456\ncommit def456\nbuilt 2026-11-21T09:00:00Z\ngo1.26.8\n"},
		{"go build in a checkout", vcs, stamp{}, false, "agentrunner (devel)\ncommit abc123 (modified)\nbuilt 2026-11-20T10:00:00Z\ngo1.26.8\n"},
		{"go run", bare, stamp{}, true, "commit unknown (built with go run: no commit; build with make build / go build)\n"},
		{"go build -buildvcs=false", bare, stamp{}, false, "commit unknown (built without VCS stamping: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionText(tc.info, tc.s, tc.goRun); !strings.Contains(got, tc.want) {
				t.Errorf("versionText = %q, want it to contain %q", got, tc.want)
			}
		})
	}
	if !isGoRun("/tmp/go-build123/b001/exe/agentrunner") || isGoRun("/home/u/agentrunner/.tmp/bin/agentrunner") {
		t.Error("isGoRun tells go run's binary from a built one wrongly")
	}
}

// TestMakeBuildStamps builds with make build's -ldflags and checks that
// the binary prints the commit of HEAD.
func TestMakeBuildStamps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "agentrunner")
	mk := exec.Command("make", "-C", "../..", "build", "BIN="+bin)
	mk.Stderr = os.Stderr
	if err := mk.Run(); err != nil {
		t.Fatalf("make build: %v", err)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "commit " + strings.TrimSpace(string(head)); !strings.Contains(string(out), want) {
		t.Errorf("make build's binary printed %q, want %q", out, want)
	}
}
