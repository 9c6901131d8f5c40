package main

import (
	"bytes"
	"io"
	"regexp"
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
