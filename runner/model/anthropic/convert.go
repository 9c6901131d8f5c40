package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// This file is the Anthropic boundary for requests: agentrunner.v1 contents
// become Messages API turns here and nowhere else.
//
// A thought goes back as a thinking block only with the signature the API
// gave it (the API refuses an unsigned one); inline images go as base64
// image blocks and image file URIs as URL images; other binary data is
// described in a text block rather than dropped.

// toParams builds the request body for one call.
func (m *Model) toParams(name string, req *model.Request) (anthropic.MessageNewParams, error) {
	msgs, err := toMessages(req.Contents)
	if err != nil {
		return anthropic.MessageNewParams{}, err
	}
	p := anthropic.MessageNewParams{Model: anthropic.Model(name), Messages: msgs, MaxTokens: m.maxTokens, Tools: toTools(req.Tools)}
	if req.SystemInstruction != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.SystemInstruction}}
	}
	c := req.Config
	if c == nil {
		return p, nil
	}
	if c.MaxOutputTokens > 0 {
		p.MaxTokens = int64(c.MaxOutputTokens)
	}
	if c.Temperature != nil {
		p.Temperature = anthropic.Float(model.Widen(*c.Temperature))
	}
	if c.TopP != nil {
		p.TopP = anthropic.Float(model.Widen(*c.TopP))
	}
	if c.TopK != nil {
		p.TopK = anthropic.Int(int64(*c.TopK))
	}
	p.StopSequences = append([]string(nil), c.StopSequences...)
	if c.ThinkingBudget != nil && *c.ThinkingBudget > 0 {
		p.Thinking.OfEnabled = &anthropic.ThinkingConfigEnabledParam{BudgetTokens: int64(*c.ThinkingBudget)}
	}
	return p, nil
}

// toMessages converts the conversation. Consecutive contents of the same
// role are merged into one turn: the API wants user and assistant turns to
// alternate, and the runner may store, say, a function response and a
// user's text as two contents.
func toMessages(contents []*agentrunnerv1.Content) ([]anthropic.MessageParam, error) {
	var out []anthropic.MessageParam
	for i, c := range contents {
		blocks, err := toBlocks(c)
		if err != nil {
			return nil, fmt.Errorf("contents[%d]: %w", i, err)
		}
		if len(blocks) == 0 {
			continue
		}
		role := anthropic.MessageParamRoleUser
		if c.GetRole() == "model" {
			role = anthropic.MessageParamRoleAssistant
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			continue
		}
		out = append(out, anthropic.MessageParam{Role: role, Content: blocks})
	}
	for i := range out {
		if out[i].Role == anthropic.MessageParamRoleUser {
			toolResultsFirst(out[i].Content)
		}
	}
	return out, nil
}

// toolResultsFirst moves tool results ahead of anything else in a user
// turn, which is where the API requires them.
func toolResultsFirst(blocks []anthropic.ContentBlockParamUnion) {
	rank := func(b anthropic.ContentBlockParamUnion) int {
		if b.OfToolResult != nil {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(blocks, func(a, b anthropic.ContentBlockParamUnion) int { return rank(a) - rank(b) })
}

// toBlocks converts the parts of one content.
func toBlocks(c *agentrunnerv1.Content) ([]anthropic.ContentBlockParamUnion, error) {
	var out []anthropic.ContentBlockParamUnion
	for _, p := range c.GetParts() {
		b, ok, err := toBlock(p, c.GetRole() == "model")
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, b)
		}
	}
	return out, nil
}

func toBlock(p *agentrunnerv1.Part, fromModel bool) (anthropic.ContentBlockParamUnion, bool, error) {
	switch d := p.GetData().(type) {
	case *agentrunnerv1.Part_Text:
		if p.GetThought() {
			if !fromModel || len(p.GetThoughtSignature()) == 0 {
				return anthropic.ContentBlockParamUnion{}, false, nil
			}
			return anthropic.NewThinkingBlock(string(p.GetThoughtSignature()), d.Text), true, nil
		}
		if d.Text == "" {
			return anthropic.ContentBlockParamUnion{}, false, nil
		}
		return anthropic.NewTextBlock(d.Text), true, nil
	case *agentrunnerv1.Part_FunctionCall:
		return anthropic.NewToolUseBlock(d.FunctionCall.GetId(), model.JSONObject(d.FunctionCall.GetArgs()), d.FunctionCall.GetName()), true, nil
	case *agentrunnerv1.Part_FunctionResponse:
		body, err := json.Marshal(model.JSONObject(d.FunctionResponse.GetResponse()))
		if err != nil {
			return anthropic.ContentBlockParamUnion{}, false, fmt.Errorf("function response %q: %w", d.FunctionResponse.GetName(), err)
		}
		return anthropic.NewToolResultBlock(d.FunctionResponse.GetId(), string(body), false), true, nil
	case *agentrunnerv1.Part_InlineData:
		if mt := d.InlineData.GetMimeType(); strings.HasPrefix(mt, "image/") && !fromModel {
			return anthropic.NewImageBlockBase64(mt, base64.StdEncoding.EncodeToString(d.InlineData.GetData())), true, nil
		}
		return anthropic.NewTextBlock(fmt.Sprintf("[%s data %q, %d bytes, not shown]", d.InlineData.GetMimeType(), d.InlineData.GetDisplayName(), len(d.InlineData.GetData()))), true, nil
	case *agentrunnerv1.Part_FileData:
		if strings.HasPrefix(d.FileData.GetMimeType(), "image/") && !fromModel {
			return anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: d.FileData.GetFileUri()}), true, nil
		}
		return anthropic.NewTextBlock(fmt.Sprintf("[%s file %s]", d.FileData.GetMimeType(), d.FileData.GetFileUri())), true, nil
	}
	return anthropic.ContentBlockParamUnion{}, false, nil
}

// toTools declares the functions. The JSON schema's properties and
// required list have fields of their own in the SDK; the rest of the
// schema rides along as extra fields.
func toTools(decls []*model.FunctionDeclaration) []anthropic.ToolUnionParam {
	var out []anthropic.ToolUnionParam
	for _, d := range decls {
		if d == nil {
			continue
		}
		schema := anthropic.ToolInputSchemaParam{Properties: map[string]any{}}
		for k, v := range d.Parameters {
			switch k {
			case "type":
			case "properties":
				schema.Properties = v
			case "required":
				schema.Required = toStrings(v)
			default:
				if schema.ExtraFields == nil {
					schema.ExtraFields = map[string]any{}
				}
				schema.ExtraFields[k] = v
			}
		}
		t := &anthropic.ToolParam{Name: d.Name, InputSchema: schema}
		if d.Description != "" {
			t.Description = anthropic.String(d.Description)
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: t})
	}
	return out
}

func toStrings(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		out := make([]string, 0, len(l))
		for _, s := range l {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
