package builtin

import (
	"fmt"
	"strings"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
)

// Names of the memory tools.
const (
	// LoadMemoryName searches the user's memory with the model's query.
	LoadMemoryName = "load_memory"
	// PreloadMemoryName adds the memories relevant to the user's latest
	// message to every model request; the model never calls it.
	PreloadMemoryName = "preload_memory"
)

// loadMemoryArgs are the arguments of load_memory.
type loadMemoryArgs struct {
	Query string `json:"query" description:"What to look for in past conversations: a few keywords."`
}

// LoadMemory returns the load_memory tool: the model calls it with a
// query and gets the best matching events of the user's past sessions
// (the current one left out) as "memories".
func LoadMemory() tool.Tool {
	t, err := tool.NewFunction(LoadMemoryName,
		"Searches the memory of your past conversations with the user for a query, and returns what was said.",
		func(ctx tool.Context, args loadMemoryArgs) (map[string]any, error) {
			if strings.TrimSpace(args.Query) == "" {
				return nil, fmt.Errorf("query is empty")
			}
			entries, err := ctx.Memory().Search(ctx, args.Query)
			if err != nil {
				return nil, err
			}
			memories := make([]any, 0, len(entries))
			for _, e := range entries {
				memories = append(memories, map[string]any{
					"session_id": e.SessionID,
					"author":     e.Author,
					"time":       e.Time.UTC().Format(time.RFC3339),
					"text":       memory.Text(e),
				})
			}
			return map[string]any{"memories": memories}, nil
		})
	if err != nil {
		panic(err) // loadMemoryArgs is a valid argument type
	}
	return builtinTool{t}
}

// preloadMemoryTool searches memory with the user's latest message before
// each model call and puts what it finds in the system instruction.
type preloadMemoryTool struct{}

// PreloadMemory returns the preload_memory tool. It is never declared to
// the model (tool.Undeclared): before each model call of the agent that
// has it, the user's latest message is searched for in memory and the
// memories found are added to the request's system instruction.
func PreloadMemory() tool.Tool { return preloadMemoryTool{} }

func (preloadMemoryTool) Name() string { return PreloadMemoryName }
func (preloadMemoryTool) Description() string {
	return "Adds memories of past conversations relevant to the user's latest message to each model request."
}
func (preloadMemoryTool) Declaration() *model.FunctionDeclaration { return nil }
func (preloadMemoryTool) IsLongRunning() bool                     { return false }
func (preloadMemoryTool) Undeclared()                             {}
func (preloadMemoryTool) Kind() agentrunnerv1.ToolKind {
	return agentrunnerv1.ToolKind_TOOL_KIND_BUILTIN
}

func (preloadMemoryTool) Run(tool.Context, map[string]any) (map[string]any, error) {
	return nil, fmt.Errorf("%s is not a function the model can call", PreloadMemoryName)
}

// ProcessRequest adds the memories the user's latest message finds.
func (preloadMemoryTool) ProcessRequest(ctx agent.CallbackContext, req *model.Request) error {
	query := textOf(ctx.UserContent())
	if strings.TrimSpace(query) == "" {
		return nil
	}
	entries, err := ctx.Memory().Search(ctx, query)
	if err != nil {
		return fmt.Errorf("search memory: %w", err)
	}
	if len(entries) == 0 {
		return nil
	}
	var sb strings.Builder
	sb.WriteString("The following content is from your previous conversations with the user. " +
		"It may be useful for answering the user's current query.\n<PAST_CONVERSATIONS>\n")
	for _, e := range entries {
		fmt.Fprintf(&sb, "Time: %s\n%s: %s\n", e.Time.UTC().Format(time.RFC3339), e.Author, memory.Text(e))
	}
	sb.WriteString("</PAST_CONVERSATIONS>")
	req.SystemInstruction = JoinInstruction(req.SystemInstruction, sb.String())
	return nil
}

// textOf is the non-thought text of c.
func textOf(c *agentrunnerv1.Content) string {
	return memory.Text(&memory.Entry{Content: c})
}
