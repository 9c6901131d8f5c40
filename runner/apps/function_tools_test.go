package apps

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/runner/tool"
)

const functionToolsDoc = `
apps:
  - name: shop
    function_tools:
      - name: get_order
        description: Looks an order up in the caller's system.
        parameters:
          type: object
          properties:
            order_id: { type: string, pattern: "^[0-9]+$" }
          required: [order_id]
        response: { type: object, properties: { status: { type: string } } }
    root_agent:
      name: clerk
      llm:
        model: offline
        tools: [get_order, exit_loop]
        function_tools:
          - name: refund
            parameters: { type: object, properties: { amount: { type: number, minimum: 0 } } }
`

func TestFunctionToolsFromTheAppsFile(t *testing.T) {
	cfg, err := Parse("apps.yaml", []byte(functionToolsDoc))
	if err != nil {
		t.Fatal(err)
	}
	built, err := Build(t.Context(), cfg, func(context.Context, string) (model.Model, error) { return offline.New(offline.Config{}), nil })
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := newRegistry(t, built)
	info := reg.List()[0].GetRootAgent()
	if got := strings.Join(info.GetTools(), ","); got != "get_order,exit_loop,refund" {
		t.Fatalf("tools %q", got)
	}
	var details []string
	for _, d := range info.GetToolDetails() {
		details = append(details, fmt.Sprintf("%s %s %v", d.GetName(), d.GetKind(), d.GetParameters().AsMap()["required"]))
	}
	want := []string{"get_order TOOL_KIND_FUNCTION [order_id]", "exit_loop TOOL_KIND_BUILTIN <nil>", "refund TOOL_KIND_FUNCTION <nil>"}
	if !slices.Equal(details, want) {
		t.Fatalf("tool details %q, want %q", details, want)
	}
	if d := info.GetToolDetails()[0]; d.GetDescription() != "Looks an order up in the caller's system." || d.GetRequireConfirmation() {
		t.Errorf("get_order details %v", d)
	}
}

func TestClientFunctionChecksArguments(t *testing.T) {
	ft, err := tool.NewClientFunction("get_order", "", map[string]any{
		"type":       "object",
		"properties": map[string]any{"order_id": map[string]any{"type": "string", "pattern": "^[0-9]+$"}},
		"required":   []any{"order_id"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args map[string]any
		want string // substring of the error; empty for valid
	}{
		{args: map[string]any{"order_id": "42"}},
		{args: map[string]any{"order_id": "x42"}, want: "order_id"},
		{args: map[string]any{}, want: "order_id"},
		{args: nil, want: "order_id"},
		{args: map[string]any{"order_id": 42.0}, want: "order_id"},
	}
	for _, tc := range tests {
		err := ft.CheckArgs(tc.args)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckArgs(%v) = %v, want %q", tc.args, err, tc.want)
		}
	}
	if !ft.IsLongRunning() || ft.Declaration().Parameters["type"] != "object" {
		t.Error("declaration or long-running flag")
	}
}

func TestFunctionToolErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string // substrings of the error: file:line, path, message
	}{
		{name: "no parameters", doc: `
apps:
  - name: a
    function_tools:
      - name: f
    root_agent: { name: r, llm: { model: m, tools: [f] } }
`, want: []string{"apps.yaml:5", "apps[0].function_tools[0].parameters", "required"}},
		{name: "not an object schema", doc: `
apps:
  - name: a
    root_agent:
      name: r
      llm:
        model: m
        function_tools:
          - name: f
            parameters: { type: string }
`, want: []string{"apps.yaml:10", "apps[0].root_agent.llm.function_tools[0].parameters", "type object"}},
		{name: "invalid schema", doc: `
apps:
  - name: a
    function_tools:
      - name: f
        parameters: { type: object, properties: { n: { type: 12 } } }
    root_agent: { name: r, llm: { model: m } }
`, want: []string{"apps.yaml:6", "apps[0].function_tools[0].parameters", "JSON Schema"}},
		{name: "unknown tool", doc: `
apps:
  - name: a
    root_agent: { name: r, llm: { model: m, tools: [nope] } }
`, want: []string{"apps[0].root_agent.llm.tools[0]", `unknown tool "nope"`}},
		{name: "clashes with a listed tool", doc: `
apps:
  - name: a
    function_tools: [{ name: f, parameters: { type: object } }]
    root_agent:
      name: r
      llm: { model: m, tools: [f], function_tools: [{ name: f, parameters: { type: object } }] }
`, want: []string{"apps[0].root_agent.llm.function_tools[0].name", `duplicate tool name "f"`}},
		{name: "built-in name", doc: `
apps:
  - name: a
    function_tools: [{ name: exit_loop, parameters: { type: object } }]
    root_agent: { name: r, llm: { model: m } }
`, want: []string{"apps[0].function_tools[0].name", "built-in"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("apps.yaml", []byte(tc.doc))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
