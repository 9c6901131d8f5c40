package tool

import (
	"encoding/json"
	"fmt"
	"reflect"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/model"
	"google.golang.org/protobuf/types/known/structpb"
)

// Tool is a function an LLM agent's model may call.
//
// When the model answers with function calls, the agent runs the tools they
// name (concurrently when there are several), returns their results to the
// model in one function-response event, and calls the model again, until it
// answers without calls. An error a tool returns, or a panic, is reported to
// the model as the result {"error": "..."}; it does not end the run.
type Tool interface {
	// Name is what the model calls the tool by; unique among an agent's
	// tools.
	Name() string
	// Description tells the model what the tool does and when to use it.
	Description() string
	// Declaration declares the tool to the model: its name, description
	// and the JSON schema of its arguments.
	Declaration() *model.FunctionDeclaration
	// Run runs one call. args are the call's arguments as decoded JSON. The
	// result is sent to the model as the function response; a nil result
	// is sent as {} (for a long-running tool it means no response yet).
	Run(ctx Context, args map[string]any) (map[string]any, error)
	// IsLongRunning reports whether the tool's result arrives later. The
	// agent still runs the tool (to start the work; a non-nil result is
	// sent as an interim response), marks the call in the event's
	// long_running_tool_ids, and ends its turn without calling the model
	// again. The client later sends a Run whose new_message carries the
	// function response; the runner routes it to this agent, which goes on
	// with the model.
	IsLongRunning() bool
}

// RequestProcessor is implemented by tools that adjust every model request
// of the agent that has them, before the before-model callbacks run: to add
// to the instruction, or to add contents (load_artifacts adds the artifacts
// the model asked for). It must not modify the request's existing contents,
// which are shared with the session.
type RequestProcessor interface {
	ProcessRequest(ctx agent.CallbackContext, req *model.Request) error
}

// Undeclared is implemented by tools the model never sees or calls: they
// only adjust requests (a RequestProcessor), as preload_memory does. An
// LLM agent leaves them out of its requests' declarations and out of the
// tools a function call may name.
type Undeclared interface {
	Undeclared()
}

// Context is what a tool runs with. State changes and artifact saves
// made through it land in the function-response event, as do the actions
// the tool sets.
type Context interface {
	agent.CallbackContext
	// FunctionCallID is the id of the call being run.
	FunctionCallID() string
	// Actions are the actions the function-response event will carry. A
	// tool sets TransferToAgent to hand the conversation over (the agent
	// then stops and the target runs in its place), Escalate to stop an
	// enclosing loop agent, SkipSummarization to end the agent's turn with
	// the tool's result instead of asking the model to summarize it. State
	// changes are better made through State().
	Actions() *agentrunnerv1.EventActions
}

// NewFunction returns a tool that calls fn. The declaration's argument
// schema is derived from Args, which must be a struct (or a pointer to one)
// or map[string]any:
//
//   - property names come from the json tags, as encoding/json reads them;
//     fields tagged json:"-" and unexported fields are left out, embedded
//     structs are flattened;
//   - a field is required unless its json tag says omitempty (or omitzero);
//   - a field's description comes from its `description:"..."` tag, or its
//     `jsonschema:"..."` tag (either the bare text or "description=...");
//   - strings, booleans, integers, floats, slices and arrays, maps with
//     string keys, nested structs, pointers (to their element's schema),
//     time.Time (a date-time string) and interfaces (any value) are
//     supported; channels, functions, complex numbers and recursive types
//     are not.
//
// The model's arguments are decoded into Args with encoding/json; a
// missing required argument or one of the wrong type is reported to the
// model as an error without calling fn. The result is encoded with
// encoding/json: a JSON object is sent as it is, any other value as
// {"result": value}.
func NewFunction[Args, Result any](name, description string, fn func(Context, Args) (Result, error)) (Tool, error) {
	return newFunction(name, description, false, fn)
}

// NewLongRunningFunction is NewFunction for a tool whose result
// arrives later (see Tool.IsLongRunning). fn starts the work; a result
// whose JSON encoding is null (a nil map or pointer) sends no interim
// response.
func NewLongRunningFunction[Args, Result any](name, description string, fn func(Context, Args) (Result, error)) (Tool, error) {
	return newFunction(name, description, true, fn)
}

func newFunction[Args, Result any](name, description string, longRunning bool, fn func(Context, Args) (Result, error)) (Tool, error) {
	if name == "" {
		return nil, fmt.Errorf("new function tool: empty name")
	}
	if fn == nil {
		return nil, fmt.Errorf("new function tool %q: nil function", name)
	}
	params, required, err := argsSchema(reflect.TypeFor[Args]())
	if err != nil {
		return nil, fmt.Errorf("new function tool %q: arguments: %w", name, err)
	}
	return &functionTool[Args, Result]{
		decl:        &model.FunctionDeclaration{Name: name, Description: description, Parameters: params},
		required:    required,
		longRunning: longRunning,
		fn:          fn,
	}, nil
}

type functionTool[Args, Result any] struct {
	decl        *model.FunctionDeclaration
	required    []string
	longRunning bool
	fn          func(Context, Args) (Result, error)
}

func (f *functionTool[Args, Result]) Name() string        { return f.decl.Name }
func (f *functionTool[Args, Result]) Description() string { return f.decl.Description }
func (f *functionTool[Args, Result]) IsLongRunning() bool { return f.longRunning }

// Declaration returns a copy, so that a callback editing a request cannot
// change the tool.
func (f *functionTool[Args, Result]) Declaration() *model.FunctionDeclaration {
	d := *f.decl
	return &d
}

func (f *functionTool[Args, Result]) Run(ctx Context, args map[string]any) (map[string]any, error) {
	for _, name := range f.required {
		if _, ok := args[name]; !ok {
			return nil, fmt.Errorf("missing required argument %q", name)
		}
	}
	var a Args
	if len(args) > 0 {
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("encode arguments: %w", err)
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("invalid arguments: %w", err)
		}
	}
	res, err := f.fn(ctx, a)
	if err != nil {
		return nil, err
	}
	return resultMap(res)
}

// resultMap encodes a tool's Go result as a JSON object: objects as they
// are, null as nil, anything else under "result".
func resultMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return nil, fmt.Errorf("decode result: %w", err)
	}
	switch d := decoded.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return d, nil
	default:
		return map[string]any{"result": d}, nil
	}
}

// ToStruct converts a tool result for a function response. structpb
// accepts only a few Go types ([]string is not one of them), so anything it
// refuses goes through encoding/json first.
func ToStruct(m map[string]any) (*structpb.Struct, error) {
	if s, err := structpb.NewStruct(m); err == nil {
		return s, nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return nil, fmt.Errorf("decode result: %w", err)
	}
	return structpb.NewStruct(decoded)
}

// Kinded is implemented by tools that say where they run. A tool that
// does not is Go code of the program serving the app (TOOL_KIND_CUSTOM).
type Kinded interface {
	Kind() agentrunnerv1.ToolKind
}

// KindOf returns where t runs.
func KindOf(t Tool) agentrunnerv1.ToolKind {
	if k, ok := t.(Kinded); ok {
		return k.Kind()
	}
	return agentrunnerv1.ToolKind_TOOL_KIND_CUSTOM
}

// IdempotencyKey is the key a tool with side effects should pass on to
// the system it acts on: the same for every execution of the same call
// (app, user, session, invocation and call id), so that a retried call
// is recognised there. MCP tools send it in the request's _meta.
func IdempotencyKey(ctx Context) string {
	return ctx.AppName() + "/" + ctx.UserID() + "/" + ctx.SessionID() + "/" + ctx.InvocationID() + "/" + ctx.FunctionCallID()
}
