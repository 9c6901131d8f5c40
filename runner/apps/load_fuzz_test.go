package apps

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary documents to the apps file loader. It must
// refuse what it cannot use with an *Error (file, line when known, path,
// message) and never panic; what it accepts must validate again, under
// the same model check.
func FuzzParse(f *testing.F) {
	f.Add(example)
	f.Add(modelsDoc)
	f.Add("apps:\n  - name: a\n    root_agent: {name: r, llm: {model: m, tools: [exit_loop]}}\n")
	f.Add("apps: [{name: a, compaction: {interval: 3, overlap: 1}, root_agent: {name: r, loop: {max_iterations: 2}, sub_agents: [{name: s, llm: {model: m}}]}}]\n")
	f.Add("apps: [\n")
	f.Add("{\"apps\": [{\"name\": \"a\", \"root_agent\": {\"name\": \"r\", \"llm\": {\"model\": \"m\", \"temperature\": 3}}}]}")
	check := UndeclaredModels(func(n string) bool { return strings.HasPrefix(n, "gemini-") || n == "m" }, "a Gemini model name")
	f.Fuzz(func(t *testing.T, doc string) {
		cfg, err := Parse("apps.yaml", []byte(doc), check)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Msg == "" || ce.Line < 0 {
				t.Fatalf("error %T %v is not a located *Error", err, err)
			}
			return
		}
		if err := Validate(cfg, check); err != nil {
			t.Fatalf("accepted, then refused on validation: %v", err)
		}
	})
}
