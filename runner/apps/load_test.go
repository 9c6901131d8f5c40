package apps

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const example = `
apps:
  - name: support
    root_agent:
      name: triage
      description: Routes the user to the right specialist.
      llm: { model: gemini-2.5-flash, instruction: "Route billing questions to billing and technical ones to tech." }
      sub_agents:
        - name: billing
          description: Answers billing questions.
          llm: { model: gemini-2.5-flash, instruction: "You answer billing questions." }
        - name: tech
          description: Answers technical questions.
          llm: { model: gemini-2.5-flash, instruction: "You answer technical questions.", disallow_transfer_to_parent: true, disallow_transfer_to_peers: true }
`

func TestParseExample(t *testing.T) {
	cfg, err := Parse("apps.yaml", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	root := cfg.GetApps()[0].GetRootAgent()
	if root.GetName() != "triage" || root.GetLlm().GetModel() != "gemini-2.5-flash" || len(root.GetSubAgents()) != 2 {
		t.Fatalf("root = %v", root)
	}
	tech := root.GetSubAgents()[1]
	if !tech.GetLlm().GetDisallowTransferToParent() || !tech.GetLlm().GetDisallowTransferToPeers() {
		t.Fatalf("tech flags lost: %v", tech)
	}
}

func TestParseJSONAndWorkflows(t *testing.T) {
	doc := `{"apps": [{"name": "pipe", "rootAgent": {"name": "loop", "loop": {"maxIterations": 3},
	  "sub_agents": [{"name": "step", "llm": {"model": "m", "tools": ["exit_loop"], "temperature": 0.5, "include_contents": "INCLUDE_CONTENTS_NONE"}}]}},
	  {"name": "par", "root_agent": {"name": "p", "parallel": {}, "sub_agents": [{"name": "a", "sequential": {}, "sub_agents": [{"name": "b", "llm": {"model": "m"}}]}]}}]}`
	cfg, err := Parse("apps.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	loop := cfg.GetApps()[0].GetRootAgent()
	if loop.GetLoop().GetMaxIterations() != 3 || loop.GetSubAgents()[0].GetLlm().GetTemperature() != 0.5 {
		t.Fatalf("loop = %v", loop)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string // substrings of the error
	}{
		{"unknown field", "apps:\n  - name: a\n    root_agent:\n      name: r\n      llm: { modle: m }\n",
			[]string{"apps.yaml:5", "apps[0].root_agent.llm", `unknown field "modle"`}},
		{"duplicate agent names", "apps:\n  - name: a\n    root_agent:\n      name: r\n      llm: {model: m}\n      sub_agents:\n        - name: x\n          llm: {model: m}\n        - name: x\n          llm: {model: m}\n",
			[]string{"apps.yaml:9", "apps[0].root_agent.sub_agents[1].name", `duplicate agent name "x"`}},
		{"unknown tool", "apps:\n  - name: a\n    root_agent:\n      name: r\n      llm: {model: m, tools: [google_search]}\n",
			[]string{"apps[0].root_agent.llm.tools[0]", `unknown tool "google_search"`}},
		{"loop without sub-agents", "apps:\n  - name: a\n    root_agent:\n      name: r\n      loop: {max_iterations: 2}\n",
			[]string{"apps[0].root_agent.sub_agents", "loop agent needs at least one sub-agent"}},
		{"two kinds", "apps:\n  - name: a\n    root_agent:\n      name: r\n      llm: {model: m}\n      loop: {}\n",
			[]string{"apps.yaml:6", "apps[0].root_agent.loop", "exclusive"}},
		{"no kind", "apps:\n  - name: a\n    root_agent:\n      name: r\n",
			[]string{"apps[0].root_agent", "exactly one of llm"}},
		{"duplicate apps", "apps:\n  - name: a\n    root_agent: {name: r, llm: {model: m}}\n  - name: a\n    root_agent: {name: r, llm: {model: m}}\n",
			[]string{"apps[1].name", `duplicate app name "a"`}},
		{"reserved name", "apps:\n  - name: a\n    root_agent: {name: user, llm: {model: m}}\n",
			[]string{"apps[0].root_agent.name", "reserved"}},
		{"summarizer's name", "apps:\n  - name: a\n    root_agent: {name: compaction, llm: {model: m}}\n",
			[]string{"apps[0].root_agent.name", "reserved"}},
		{"missing model", "apps:\n  - name: a\n    root_agent: {name: r, llm: {instruction: hi}}\n",
			[]string{"apps[0].root_agent.llm.model", "model is required"}},
		{"wrong type", "apps:\n  - name: a\n    root_agent: {name: r, llm: {model: m, disallow_transfer_to_parent: sometimes}}\n",
			[]string{"apps.yaml:3", "disallow_transfer_to_parent", "want true or false"}},
		{"bad enum", "apps:\n  - name: a\n    root_agent: {name: r, llm: {model: m, include_contents: ALL}}\n",
			[]string{"include_contents", `unknown value "ALL"`}},
		{"not a list", "apps: {name: a}\n", []string{"apps", "want a list"}},
		{"empty", "apps: []\n", []string{"no apps configured"}},
		{"not yaml", "apps: [\n", []string{"not valid YAML"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("apps.yaml", []byte(tc.doc))
			if err == nil {
				t.Fatal("no error")
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not an *Error: %v", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "apps.yaml")
	if err := os.WriteFile(path, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("missing file loaded")
	}
}
