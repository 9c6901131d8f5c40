package server

import (
	"context"
	"iter"
	"slices"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
)

// The plugin seam's tests moved to runner (plugin_hooks_test.go); the
// server's tests of sizes, dropped streams and cancelled calls still use
// this scripted tool-calling model and its tool.

// toolModel calls the tool named call on its first turn and, once the last
// content answers it, says "done: <the response>".
type toolModel struct{ call string }

func (m toolModel) Name() string { return "tool-model" }

func (m toolModel) Generate(_ context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		last := req.Contents[len(req.Contents)-1]
		for _, p := range last.GetParts() {
			if fr := p.GetFunctionResponse(); fr != nil {
				yield(&model.Response{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{
					Text: "done: " + jsonOf(fr.GetResponse().AsMap())}}}}, TurnComplete: true, FinishReason: "STOP"}, nil)
				return
			}
		}
		yield(&model.Response{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{
			FunctionCall: &agentrunnerv1.FunctionCall{Name: m.call}}}}}, TurnComplete: true, FinishReason: "STOP"}, nil)
	}
}

func jsonOf(m map[string]any) string {
	var keys []string
	for k, v := range m {
		if s, ok := v.(string); ok {
			keys = append(keys, k+"="+s)
		}
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

func mustTool(t *testing.T, name string, fn func(tool.Context, struct{}) (map[string]any, error)) tool.Tool {
	t.Helper()
	return must[tool.Tool](t)(tool.NewFunction(name, "test tool", fn))
}
