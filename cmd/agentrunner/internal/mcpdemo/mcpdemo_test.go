package mcpdemo

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServer talks to the demo server through the SDK's client over an
// in-memory transport: its tools, a cancellation and the status after it.
func TestServer(t *testing.T) {
	st, ct := mcp.NewInMemoryTransports()
	ss, err := Server().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if len(names) != 2 || names[0] != "cancel_order" || names[1] != "order_status" {
		t.Fatalf("tools %q", names)
	}
	status := func() any {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "order_status", Arguments: map[string]any{"order_id": "42"}})
		if err != nil || res.IsError {
			t.Fatalf("order_status: %v %v", res, err)
		}
		return res.StructuredContent.(map[string]any)["status"]
	}
	if s := status(); s != "shipped" {
		t.Fatalf("status before %v", s)
	}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "cancel_order", Arguments: map[string]any{"order_id": "42"}}); err != nil || res.IsError {
		t.Fatalf("cancel_order: %v %v", res, err)
	}
	if s := status(); s != "cancelled" {
		t.Fatalf("status after %v", s)
	}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "cancel_order", Arguments: map[string]any{}}); err != nil || !res.IsError {
		t.Fatalf("cancel_order without an id: %v %v", res, err)
	}
}
