package tool

import (
	"encoding/json"
	"errors"
	"fmt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/google/jsonschema-go/jsonschema"
)

// ArgumentChecker is implemented by tools that can tell, before they run,
// whether the model's arguments are acceptable. The LLM agent marks a call
// to a long-running tool as waiting for the caller only when its arguments
// pass; otherwise the tool's error answers the call at once.
type ArgumentChecker interface {
	CheckArgs(args map[string]any) error
}

// ClientFunction is a function tool the caller executes: a declaration
// with a JSON Schema, and nothing to run here. It is long-running: a call
// whose arguments satisfy the schema is streamed to the caller and the
// agent's turn ends until the caller sends the function response. A call
// whose arguments do not is answered at once with the validation error, so
// that the model can call again.
type ClientFunction struct {
	decl   *model.FunctionDeclaration
	params *jsonschema.Resolved
}

// NewClientFunction returns a tool named name whose arguments must satisfy
// the JSON Schema parameters (the schema of an object); response, when not
// nil, is the JSON Schema of the answer, declared to the model.
func NewClientFunction(name, description string, parameters, response map[string]any) (*ClientFunction, error) {
	if name == "" {
		return nil, errors.New("function tool: empty name")
	}
	params, err := compileSchema(parameters)
	if err != nil {
		return nil, fmt.Errorf("function tool %q: parameters: %w", name, err)
	}
	if !isObjectSchema(params.Schema()) {
		return nil, fmt.Errorf("function tool %q: parameters: the schema must be of type object (the model passes named arguments)", name)
	}
	if response != nil {
		if _, err := compileSchema(response); err != nil {
			return nil, fmt.Errorf("function tool %q: response: %w", name, err)
		}
	}
	return &ClientFunction{
		decl:   &model.FunctionDeclaration{Name: name, Description: description, Parameters: parameters, Response: response},
		params: params,
	}, nil
}

// compileSchema decodes and resolves a JSON Schema given as decoded JSON.
func compileSchema(m map[string]any) (*jsonschema.Resolved, error) {
	if m == nil {
		return nil, errors.New("a JSON Schema is required")
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %w", err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %w", err)
	}
	return r, nil
}

func isObjectSchema(s *jsonschema.Schema) bool {
	if s.Type == "object" {
		return true
	}
	return len(s.Types) == 1 && s.Types[0] == "object"
}

func (c *ClientFunction) Name() string        { return c.decl.Name }
func (c *ClientFunction) Description() string { return c.decl.Description }
func (c *ClientFunction) IsLongRunning() bool { return true }

// Declaration returns a copy, so that a callback editing a request cannot
// change the tool.
func (c *ClientFunction) Declaration() *model.FunctionDeclaration {
	d := *c.decl
	return &d
}

// CheckArgs validates the model's arguments against the schema.
func (c *ClientFunction) CheckArgs(args map[string]any) error {
	if args == nil {
		args = map[string]any{}
	}
	if err := c.params.Validate(args); err != nil {
		return fmt.Errorf("invalid arguments for %s: %w", c.decl.Name, err)
	}
	return nil
}

// Run only checks the arguments: the caller executes the tool and answers
// in a later Run.
func (c *ClientFunction) Run(_ Context, args map[string]any) (map[string]any, error) {
	return nil, c.CheckArgs(args)
}

// Kind is TOOL_KIND_FUNCTION: the caller executes it.
func (c *ClientFunction) Kind() agentrunnerv1.ToolKind {
	return agentrunnerv1.ToolKind_TOOL_KIND_FUNCTION
}
