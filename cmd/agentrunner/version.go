package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// Set by `make build` through -ldflags -X, from git: the build info has
// the commit only when go build stamps it (-buildvcs, on by default in a
// checkout, off on machines that set GOFLAGS=-buildvcs=false), and go run
// never stamps it.
var (
	stampedVersion  string // git describe --always --dirty
	stampedCommit   string // git rev-parse HEAD
	stampedTime     string // the commit's time
	stampedModified string // "true" when the work tree had changes
)

// buildVersion is the module version of this binary ("(devel)" when built
// from a checkout).
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return info.Main.Version
}

// printVersion prints the version, the commit and its time and the Go
// version, from what make build stamped or else the build info.
func printVersion(w io.Writer) error {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		_, err := fmt.Fprintln(w, "agentrunner: no build information in this binary")
		return err
	}
	self, _ := os.Executable()
	_, err := io.WriteString(w, versionText(info, stamp{stampedVersion, stampedCommit, stampedTime, stampedModified == "true"}, isGoRun(self)))
	return err
}

// stamp is what make build sets.
type stamp struct {
	version, commit, time string
	modified              bool
}

// versionText is printVersion's text. Without a commit it says why and how
// to get one, since "unknown" alone sends people looking for a bug.
func versionText(info *debug.BuildInfo, s stamp, goRun bool) string {
	settings := map[string]string{}
	for _, kv := range info.Settings {
		settings[kv.Key] = kv.Value
	}
	version, commit, built := s.version, s.commit, s.time
	modified := s.modified
	if commit == "" {
		version, commit, built = info.Main.Version, settings["vcs.revision"], settings["vcs.time"]
		modified = settings["vcs.modified"] == "true"
	}
	switch {
	case commit == "" && goRun:
		commit = "unknown (built with go run: no commit; build with make build / go build)"
	case commit == "":
		commit = "unknown (built without VCS stamping: build in a git checkout with make build, or go build -buildvcs=true)"
	case modified:
		commit += " (modified)"
	}
	if built == "" {
		built = "unknown"
	}
	return fmt.Sprintf("agentrunner %s\ncommit %s\nbuilt %s\n%s\n", version, commit, built, info.GoVersion)
}

// isGoRun reports whether the binary at path is one go run built: go run
// (and go test) link into a temporary go-build directory.
func isGoRun(path string) bool {
	return strings.Contains(filepath.ToSlash(path), "/go-build")
}
