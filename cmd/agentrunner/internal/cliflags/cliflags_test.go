package cliflags

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		app        string
		json       bool
		positional []string
	}{
		{"flags first", []string{"--app", "x", "--json", "id"}, "x", true, []string{"id"}},
		{"flags last", []string{"id", "--app", "x", "--json"}, "x", true, []string{"id"}},
		{"intermixed", []string{"a", "--app=x", "b", "--json", "c"}, "x", true, []string{"a", "b", "c"}},
		{"no flags", []string{"a", "b"}, "", false, []string{"a", "b"}},
		{"nothing", nil, "", false, nil},
		{"-- ends the flags", []string{"a", "--", "--json", "-b"}, "", false, []string{"a", "--json", "-b"}},
		{"a flag value like a positional", []string{"--app", "id", "other"}, "id", false, []string{"other"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			app := fs.String("app", "", "")
			js := fs.Bool("json", false, "")
			got, err := Parse(fs, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if *app != tc.app || *js != tc.json || !slices.Equal(got, tc.positional) {
				t.Errorf("Parse(%q): app %q json %v positional %q; want %q %v %q", tc.args, *app, *js, got, tc.app, tc.json, tc.positional)
			}
		})
	}
}

func TestParseUnknownFlagAfterArgument(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := Parse(fs, []string{"id", "--nope"}); err == nil {
		t.Error("an unknown flag after an argument was accepted")
	}
}
