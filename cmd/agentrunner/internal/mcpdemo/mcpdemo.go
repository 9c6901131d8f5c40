// Package mcpdemo is `agentrunner mcp-demo`: a small MCP server on stdio,
// made with the official go-sdk, whose tools act on an in-memory order
// book. The default apps file gives its tools to the orders app, so that a
// fresh server shows MCP tools and confirmations without anything else
// installed.
package mcpdemo

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// orderArgs name an order.
type orderArgs struct {
	OrderID string `json:"order_id" jsonschema:"The order's number."`
}

// orderState is an order after a tool acted on it.
type orderState struct {
	OrderID string `json:"order_id"`
	Status  string `json:"status"`
}

// book is the order book the tools share, for the life of the process.
type book struct {
	mu       sync.Mutex
	statuses map[string]string
}

// Server returns the MCP server: cancel_order and order_status.
func Server() *mcp.Server {
	b := &book{statuses: map[string]string{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "agentrunner-mcp-demo", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "cancel_order", Description: "Cancels an order by its number."}, b.cancel)
	mcp.AddTool(s, &mcp.Tool{Name: "order_status", Description: "Tells an order's status by its number."}, b.status)
	return s
}

func (b *book) cancel(_ context.Context, _ *mcp.CallToolRequest, in orderArgs) (*mcp.CallToolResult, orderState, error) {
	if in.OrderID == "" {
		return nil, orderState{}, fmt.Errorf("order_id is required")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.statuses[in.OrderID] = "cancelled"
	return nil, orderState{OrderID: in.OrderID, Status: "cancelled"}, nil
}

func (b *book) status(_ context.Context, _ *mcp.CallToolRequest, in orderArgs) (*mcp.CallToolResult, orderState, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, ok := b.statuses[in.OrderID]
	if !ok {
		st = "shipped"
	}
	return nil, orderState{OrderID: in.OrderID, Status: st}, nil
}

// Main serves the tools on stdin and stdout until the client goes away.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "Usage: agentrunner mcp-demo   (an MCP server on stdin and stdout; no flags)")
		return fmt.Errorf("mcp-demo takes no arguments")
	}
	return Server().Run(ctx, &mcp.StdioTransport{})
}
