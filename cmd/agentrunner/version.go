package main

import (
	"fmt"
	"io"
	"runtime/debug"
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

// printVersion prints the module version, the commit and its time and the
// Go version, from the build info.
func printVersion(w io.Writer) error {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		_, err := fmt.Fprintln(w, "agentrunner: no build information in this binary")
		return err
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	commit := settings["vcs.revision"]
	if commit == "" {
		commit = "unknown"
	} else if settings["vcs.modified"] == "true" {
		commit += " (modified)"
	}
	built := settings["vcs.time"]
	if built == "" {
		built = "unknown"
	}
	_, err := fmt.Fprintf(w, "agentrunner %s\ncommit %s\nbuilt %s\n%s\n", info.Main.Version, commit, built, info.GoVersion)
	return err
}
