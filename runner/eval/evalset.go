package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The shapes of adk-python's eval files (src/google/adk/evaluation:
// eval_set.py, eval_case.py, and google.genai's Content). The JSON names
// are ADK's snake_case field names; ADK's pydantic models also accept the
// camelCase aliases (evalSetId, userContent, functionCall...), which Load
// turns into these before decoding.

// EvalSet is a set of eval cases (ADK's EvalSet).
type EvalSet struct {
	EvalSetID         string     `json:"eval_set_id"`
	Name              string     `json:"name,omitempty"`
	Description       string     `json:"description,omitempty"`
	EvalCases         []EvalCase `json:"eval_cases"`
	CreationTimestamp float64    `json:"creation_timestamp,omitempty"`
}

// EvalCase is one conversation with its expected answers (ADK's EvalCase).
type EvalCase struct {
	EvalID            string        `json:"eval_id"`
	Conversation      []Invocation  `json:"conversation"`
	SessionInput      *SessionInput `json:"session_input,omitempty"`
	CreationTimestamp float64       `json:"creation_timestamp,omitempty"`
}

// SessionInput is the session a case starts from (ADK's SessionInput).
type SessionInput struct {
	AppName string         `json:"app_name,omitempty"`
	UserID  string         `json:"user_id,omitempty"`
	State   map[string]any `json:"state,omitempty"`
}

// Invocation is one turn: the user's message, and the tool calls and
// final response expected (in an eval file) or seen (in a result).
type Invocation struct {
	InvocationID      string            `json:"invocation_id,omitempty"`
	UserContent       *Content          `json:"user_content"`
	FinalResponse     *Content          `json:"final_response,omitempty"`
	IntermediateData  *IntermediateData `json:"intermediate_data,omitempty"`
	CreationTimestamp float64           `json:"creation_timestamp,omitempty"`
}

// IntermediateData is what an agent did on its way to the final response.
// ADK's newer form, invocation_events, is read too: its function calls
// are the tool uses.
type IntermediateData struct {
	ToolUses              []FunctionCall    `json:"tool_uses,omitempty"`
	IntermediateResponses []json.RawMessage `json:"intermediate_responses,omitempty"`
	InvocationEvents      []InvocationEvent `json:"invocation_events,omitempty"`
}

// InvocationEvent is one event of ADK's invocation_events form.
type InvocationEvent struct {
	Author  string   `json:"author,omitempty"`
	Content *Content `json:"content,omitempty"`
}

// Content is google.genai's Content, reduced to what evaluation reads.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is a part of a Content; evaluation reads text and function calls.
type Part struct {
	Text             string          `json:"text,omitempty"`
	FunctionCall     *FunctionCall   `json:"function_call,omitempty"`
	FunctionResponse json.RawMessage `json:"function_response,omitempty"`
}

// FunctionCall is a tool call: its name and arguments.
type FunctionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
}

// Text joins the text parts of c with newlines, as ADK's
// _get_text_from_content does; "" for nil.
func (c *Content) Text() string {
	if c == nil {
		return ""
	}
	var texts []string
	for _, p := range c.Parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// ToolCalls is every tool call of an invocation, in order: the tool_uses,
// then the function calls of invocation_events (ADK's get_all_tool_calls).
func (d *IntermediateData) ToolCalls() []FunctionCall {
	if d == nil {
		return nil
	}
	calls := append([]FunctionCall(nil), d.ToolUses...)
	for _, ev := range d.InvocationEvents {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionCall != nil {
				calls = append(calls, *p.FunctionCall)
			}
		}
	}
	return calls
}

// ErrInvalid marks an eval file or config that cannot be read.
var ErrInvalid = errors.New("invalid eval file")

// Load reads an eval set: an .evalset.json (ADK's EvalSet), or the older
// .test.json form that ADK's AgentEvaluator still reads (a list of turns
// with query, expected_tool_use, reference), which becomes one case named
// name. A .test.json in the EvalSet form is read as an EvalSet, as ADK does.
func Load(name string, data []byte) (*EvalSet, error) {
	var raw any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
	}
	if list, ok := raw.([]any); ok {
		return loadOldFormat(name, list)
	}
	var set EvalSet
	if err := decodeNormalized(raw, &set); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
	}
	if err := set.validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
	}
	return &set, nil
}

func (s *EvalSet) validate() error {
	if s.EvalSetID == "" {
		return errors.New("eval_set_id is missing")
	}
	seen := map[string]bool{}
	for i, c := range s.EvalCases {
		if c.EvalID == "" {
			return fmt.Errorf("eval_cases[%d]: eval_id is missing", i)
		}
		if seen[c.EvalID] {
			return fmt.Errorf("eval_cases[%d]: eval_id %q repeats", i, c.EvalID)
		}
		seen[c.EvalID] = true
		if len(c.Conversation) == 0 {
			return fmt.Errorf("eval case %q: conversation is empty (conversation_scenario, ADK's simulated user, is not supported)", c.EvalID)
		}
		for j, inv := range c.Conversation {
			if inv.UserContent.Text() == "" {
				return fmt.Errorf("eval case %q: conversation[%d]: user_content has no text (only text user messages are supported)", c.EvalID, j)
			}
		}
	}
	return nil
}

// oldTurn is one turn of the .test.json form.
type oldTurn struct {
	Query           string `json:"query"`
	Reference       string `json:"reference"`
	ExpectedToolUse []struct {
		ToolName  string         `json:"tool_name"`
		ToolInput map[string]any `json:"tool_input"`
	} `json:"expected_tool_use"`
}

func loadOldFormat(name string, list []any) (*EvalSet, error) {
	var turns []oldTurn
	if err := remarshal(list, &turns); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
	}
	if len(turns) == 0 {
		return nil, fmt.Errorf("%w: %s: no turns", ErrInvalid, name)
	}
	c := EvalCase{EvalID: name}
	for i, t := range turns {
		if t.Query == "" {
			return nil, fmt.Errorf("%w: %s: turn %d has no query", ErrInvalid, name, i)
		}
		inv := Invocation{
			UserContent:      &Content{Role: "user", Parts: []Part{{Text: t.Query}}},
			FinalResponse:    &Content{Role: "model", Parts: []Part{{Text: t.Reference}}},
			IntermediateData: &IntermediateData{},
		}
		for _, u := range t.ExpectedToolUse {
			inv.IntermediateData.ToolUses = append(inv.IntermediateData.ToolUses, FunctionCall{Name: u.ToolName, Args: u.ToolInput})
		}
		c.Conversation = append(c.Conversation, inv)
	}
	return &EvalSet{EvalSetID: name, EvalCases: []EvalCase{c}}, nil
}

func remarshal(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return err
	}
	return nil
}

// decodeNormalized turns ADK's camelCase aliases into snake_case names,
// leaving the insides of free-form maps (args, state, function responses)
// alone, and decodes the result into out. Numbers stay json.Number until
// args are compared, so 1 and 1.0 compare as Python compares them.
func decodeNormalized(v any, out any) error {
	return remarshal(normalizeKeys(v), out)
}

// freeForm are the fields whose values are the user's own maps.
var freeForm = map[string]bool{"args": true, "state": true, "function_response": true, "response": true, "intermediate_responses": true}

func normalizeKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, val := range t {
			sk := snake(k)
			if freeForm[sk] {
				m[sk] = val
			} else {
				m[sk] = normalizeKeys(val)
			}
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, val := range t {
			l[i] = normalizeKeys(val)
		}
		return l
	}
	return v
}

// snake turns evalSetId into eval_set_id; snake_case stays as it is.
func snake(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c >= 'A' && c <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteByte(c + 'a' - 'A')
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// PlainArgs returns the call's arguments with every JSON number as a
// float64, as protobuf's Struct holds them.
func (c FunctionCall) PlainArgs() map[string]any {
	v, _ := plain(c.Args).(map[string]any)
	return v
}

func plain(v any) any {
	switch t := v.(type) {
	case json.Number:
		f, _ := t.Float64()
		return f
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, val := range t {
			m[k] = plain(val)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, val := range t {
			l[i] = plain(val)
		}
		return l
	}
	return v
}
