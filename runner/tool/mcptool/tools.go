package mcptool

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tools returns the server's tools named in names (all of them when names
// is empty) as tools an LLM agent can call. An unknown name is an error
// listing the server's tools.
func (s *Server) Tools(names []string) ([]tool.Tool, error) {
	var out []tool.Tool
	for _, t := range s.tools {
		if len(names) == 0 || slices.Contains(names, t.Name) {
			out = append(out, &mcpTool{s: s, t: t, decl: declaration(t)})
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(s.tools, func(t *mcp.Tool) bool { return t.Name == n }) {
			var have []string
			for _, t := range s.tools {
				have = append(have, t.Name)
			}
			return nil, fmt.Errorf("mcp server %s has no tool %q; it has %q", s.cfg.Name, n, have)
		}
	}
	return out, nil
}

// declaration turns an MCP tool's input schema into a declaration.
func declaration(t *mcp.Tool) *model.FunctionDeclaration {
	d := &model.FunctionDeclaration{Name: t.Name, Description: t.Description}
	if raw, err := json.Marshal(t.InputSchema); err == nil {
		var params map[string]any
		if json.Unmarshal(raw, &params) == nil {
			d.Parameters = params
		}
	}
	return d
}

// mcpTool is one tool of an MCP server.
type mcpTool struct {
	s    *Server
	t    *mcp.Tool
	decl *model.FunctionDeclaration
}

func (m *mcpTool) Name() string        { return m.t.Name }
func (m *mcpTool) Description() string { return m.t.Description }
func (m *mcpTool) IsLongRunning() bool { return false }

// Kind is TOOL_KIND_MCP.
func (m *mcpTool) Kind() agentrunnerv1.ToolKind { return agentrunnerv1.ToolKind_TOOL_KIND_MCP }

func (m *mcpTool) Declaration() *model.FunctionDeclaration {
	d := *m.decl
	return &d
}

// Run calls the tool. Its idempotency key is the session, the invocation
// and the call id, the same however often the same call is sent.
func (m *mcpTool) Run(ctx tool.Context, args map[string]any) (map[string]any, error) {
	res, err := m.s.call(ctx, m.t.Name, args, tool.IdempotencyKey(ctx))
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, fmt.Errorf("%s", texts(res.Content))
	}
	return result(res), nil
}

// result turns a tool's result into a function response: its structured
// content when it is an object, else its content (text, and images and
// audio as base64 inline data).
func result(res *mcp.CallToolResult) map[string]any {
	if m, ok := res.StructuredContent.(map[string]any); ok {
		return m
	}
	var content []any
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			content = append(content, map[string]any{"type": "text", "text": c.Text})
		case *mcp.ImageContent:
			content = append(content, map[string]any{"type": "image", "mime_type": c.MIMEType, "data": base64.StdEncoding.EncodeToString(c.Data)})
		case *mcp.AudioContent:
			content = append(content, map[string]any{"type": "audio", "mime_type": c.MIMEType, "data": base64.StdEncoding.EncodeToString(c.Data)})
		}
	}
	if len(content) == 1 {
		if m := content[0].(map[string]any); m["type"] == "text" {
			return map[string]any{"result": m["text"]}
		}
	}
	return map[string]any{"content": content}
}

// texts joins the text of content, for error messages.
func texts(content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		return "the tool failed without saying why"
	}
	return strings.Join(parts, "\n")
}
