package apps

import (
	"errors"
	"strings"
	"testing"
)

// An indentation slip deep in the file is reported where it is, not at
// the start of the block that holds it (where yaml.v3 puts it).
func TestSyntaxErrorAtItsLineAndColumn(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"indentation", "apps:\n  - name: a\n    root_agent:\n      name: x\n     llm: {}\n", "apps.yaml:5:6: "},
		{"unclosed flow", "apps:\n  - name: a\n    root_agent:\n      name: x\n      llm: {model: [}\n", "apps.yaml:5:"}, // the column is of the flow mapping, {: a prefix cut inside it fails the same way
		{"tab", "apps:\n  - name: a\n\tfoo: 1\n", "apps.yaml:3:1: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("apps.yaml", []byte(tt.doc))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !strings.Contains(err.Error(), "not valid YAML") {
				t.Fatalf("Parse = %v, want it to start with %q", err, tt.want)
			}
		})
	}
}

// Every problem of a file comes out at once, each with its line and
// field, up to MaxErrors.
func TestAllErrorsAtOnce(t *testing.T) {
	doc := `models:
  - {name: gpt, provider: openai, api_key_env: sk-proj-0123456789abcdef}
apps:
  - name: a
    root_agent:
      name: r
      llm: {model: gtp, tools: [exit_lop]}
      sub_agents:
        - {name: s, llm: {model: gpt, temprature: 0.5}}
  - name: a
    root_agent: {name: q, loop: {}}
`
	_, err := Parse("apps.yaml", []byte(doc), UndeclaredModels(func(string) bool { return false }, "a Gemini model name"))
	// The unknown field does not hide the file's other problems.
	for _, want := range []string{
		`apps.yaml:9: apps[0].root_agent.sub_agents[0].llm: unknown field "temprature" in LlmAgentConfig (did you mean "temperature"?)`,
		"apps.yaml:2: models[0].api_key_env: this looks like an OpenAI API key",
		`apps.yaml:7: apps[0].root_agent.llm.model: model "gtp" is not declared in models and is not a Gemini model name (did you mean "gpt"?)`,
		`apps.yaml:7: apps[0].root_agent.llm.tools[0]: unknown tool "exit_lop" (did you mean "exit_loop"?)`,
		`apps.yaml:10: apps[1].name: duplicate app name "a"`,
		"apps.yaml:11: apps[1].root_agent.sub_agents: a loop agent needs at least one sub-agent",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "0123456789abcdef") {
		t.Errorf("the key reached the error:\n%v", err)
	}
}

// A field the schema refuses is not reported again by validation as
// missing: a misspelt required field is one problem, and the file's
// others still come with it.
func TestRefusedFieldNotReportedMissing(t *testing.T) {
	doc := `apps:
  - name: a
    root_agent: {name: r, llm: {modle: m}}
  - name: a
    root_agent: {name: q, loop: {}}
`
	_, err := Parse("apps.yaml", []byte(doc))
	var es Errors
	if !errors.As(err, &es) || len(es) != 3 {
		t.Fatalf("Parse = %v; want 3 problems", err)
	}
	for i, want := range []string{
		`apps.yaml:3: apps[0].root_agent.llm: unknown field "modle" in LlmAgentConfig (did you mean "model"?)`,
		`apps.yaml:4: apps[1].name: duplicate app name "a" (also apps[0])`,
		"apps.yaml:5: apps[1].root_agent.sub_agents: a loop agent needs at least one sub-agent",
	} {
		if es[i].Error() != want {
			t.Errorf("problem %d = %q; want %q", i, es[i], want)
		}
	}
}

// Schema problems across the file also come together, and stop at the
// bound.
func TestSchemaErrorsTogetherAndBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("apps:\n")
	for range MaxErrors + 5 {
		b.WriteString("  - {name: a, rot_agent: {}}\n")
	}
	_, err := Parse("apps.yaml", []byte(b.String()))
	var es Errors
	if !errors.As(err, &es) || len(es) != MaxErrors {
		t.Fatalf("Parse = %d errors, want %d:\n%v", len(es), MaxErrors, err)
	}
	if !strings.Contains(es[3].Error(), `apps.yaml:5: apps[3]: unknown field "rot_agent" in AppConfig (did you mean "root_agent"?)`) || !strings.Contains(err.Error(), "stopped after") {
		t.Fatalf("errors = %v", err)
	}
}

func TestDidYouMean(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{"modle", "model"}, {"instrucion", "instruction"}, {"xyz", ""}, {"sub_agent", "sub_agents"},
	} {
		if got := didYouMean(tt.got, []string{"model", "instruction", "sub_agents", "name"}); !strings.Contains(got, `"`+tt.want+`"`) && (tt.want != "" || got != "") {
			t.Errorf("didYouMean(%q) = %q, want %q", tt.got, got, tt.want)
		}
	}
}
