package runner

import (
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"google.golang.org/protobuf/types/known/structpb"
)

func call(id, name string, args map[string]any) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: name, Args: newStruct(args)}}}
}

func reply(id, name string, resp map[string]any) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name, Response: newStruct(resp)}}}
}

// newStruct is structpb.NewStruct for values known to convert.
func newStruct(m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return s
}

func content(role string, parts ...*agentrunnerv1.Part) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: role, Parts: parts}
}

// contentLines renders contents as "role: part | part" for comparisons.
func contentLines(contents []*agentrunnerv1.Content) []string {
	var out []string
	for _, c := range contents {
		var parts []string
		for _, p := range c.GetParts() {
			switch {
			case p.GetFunctionCall() != nil:
				parts = append(parts, "call "+p.GetFunctionCall().GetId()+" "+p.GetFunctionCall().GetName())
			case p.GetFunctionResponse() != nil:
				parts = append(parts, "response "+p.GetFunctionResponse().GetId()+" "+jsonOf(p.GetFunctionResponse().GetResponse()))
			default:
				parts = append(parts, p.GetText())
			}
		}
		out = append(out, c.GetRole()+": "+strings.Join(parts, " | "))
	}
	return out
}

func TestTransferTargets(t *testing.T) {
	// root (llm)
	// ├── a (llm) ── a1 (llm)
	// ├── b (llm, disallows transfer to parent)
	// ├── c (llm, disallows transfer to peers)
	// └── seq (sequential) ── s1 (llm)
	a1 := llm(t, llmagent.Config{Name: "a1"})
	a := llm(t, llmagent.Config{Name: "a", SubAgents: []agent.Agent{a1}})
	b := llm(t, llmagent.Config{Name: "b", DisallowTransferToParent: true})
	c := llm(t, llmagent.Config{Name: "c", DisallowTransferToPeers: true})
	s1 := llm(t, llmagent.Config{Name: "s1"})
	seq := must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "seq", SubAgents: []agent.Agent{s1}}))
	root := llm(t, llmagent.Config{Name: "root", SubAgents: []agent.Agent{a, b, c, seq}})
	tr := must[*agent.Tree](t)(agent.NewTree(root))
	tests := []struct {
		agent agent.Agent
		want  []string
	}{
		{root, []string{"a", "b", "c", "seq"}},
		{a, []string{"a1", "root", "b", "c", "seq"}},
		{b, []string{"a", "c", "seq"}},
		{c, []string{"root"}},
		{a1, []string{"a"}},
		{s1, nil}, // a workflow parent keeps its order
	}
	for _, tc := range tests {
		t.Run(tc.agent.Name(), func(t *testing.T) {
			var got []string
			for _, x := range tr.TransferTargets(tc.agent) {
				got = append(got, x.Name())
			}
			if !equalStrings(got, tc.want) {
				t.Fatalf("targets %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewLLMAgentRejectsBadTools(t *testing.T) {
	mk := func(name string) tool.Tool {
		return must[tool.Tool](t)(tool.NewFunction(name, "", func(tool.Context, struct{}) (any, error) { return nil, nil }))
	}
	tests := []struct {
		name string
		cfg  llmagent.Config
		want string
	}{
		{name: "nil tool", cfg: llmagent.Config{Tools: []tool.Tool{nil}}, want: "tool 0 is nil"},
		{name: "duplicate", cfg: llmagent.Config{Tools: []tool.Tool{mk("x"), mk("x")}}, want: `duplicate tool name "x"`},
		{name: "reserved", cfg: llmagent.Config{Tools: []tool.Tool{mk(builtin.TransferToAgentName)}}, want: "reserved"},
		{name: "include contents", cfg: llmagent.Config{IncludeContents: 42}, want: "unknown IncludeContents"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Name, tc.cfg.Model = "a", &fakeModel{name: "fake"}
			if _, err := llmagent.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
