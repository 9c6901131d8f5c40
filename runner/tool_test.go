package runner

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

type address struct {
	Street string `json:"street"`
	Zip    string `json:"zip,omitempty"`
}

type Embedded struct {
	Shared string `json:"shared"`
	Tag    string `json:"tag,omitempty"`
}

type node struct {
	Children []node `json:"children"`
}

func TestArgsSchema(t *testing.T) {
	tests := []struct {
		name    string
		typ     reflect.Type
		want    string
		wantErr string
	}{
		{
			name: "basic types, tags and descriptions",
			typ: reflect.TypeFor[struct {
				Name    string   `json:"name" description:"Who to greet."`
				Times   int      `json:"times,omitempty" jsonschema:"How often."`
				Ratio   float64  `json:"ratio,omitempty" jsonschema:"description=A ratio, between 0 and 1."`
				Loud    *bool    `json:"loud"`
				Tags    []string `json:"tags,omitzero"`
				Skipped string   `json:"-"`
				hidden  string
				NoTag   uint8
			}](),
			want: `{"properties":{"NoTag":{"type":"integer"},"loud":{"type":"boolean"},` +
				`"name":{"description":"Who to greet.","type":"string"},` +
				`"ratio":{"description":"A ratio, between 0 and 1.","type":"number"},` +
				`"tags":{"items":{"type":"string"},"type":"array"},` +
				`"times":{"description":"How often.","type":"integer"}},` +
				`"required":["name","loud","NoTag"],"type":"object"}`,
		},
		{
			name: "nested structs, maps, time, any, bytes",
			typ: reflect.TypeFor[*struct {
				Home   address            `json:"home"`
				Others []*address         `json:"others,omitempty"`
				Scores map[string]float32 `json:"scores"`
				When   time.Time          `json:"when"`
				Extra  any                `json:"extra,omitempty"`
				Raw    []byte             `json:"raw,omitempty"`
			}](),
			want: `{"properties":{` +
				`"extra":{},` +
				`"home":{"properties":{"street":{"type":"string"},"zip":{"type":"string"}},"required":["street"],"type":"object"},` +
				`"others":{"items":{"properties":{"street":{"type":"string"},"zip":{"type":"string"}},"required":["street"],"type":"object"},"type":"array"},` +
				`"raw":{"description":"base64-encoded bytes","type":"string"},` +
				`"scores":{"additionalProperties":{"type":"number"},"type":"object"},` +
				`"when":{"format":"date-time","type":"string"}},` +
				`"required":["home","scores","when"],"type":"object"}`,
		},
		{
			name: "embedded fields are promoted; the outer name wins",
			typ: reflect.TypeFor[struct {
				Embedded
				Tag string `json:"tag"`
			}](),
			want: `{"properties":{"shared":{"type":"string"},"tag":{"type":"string"}},"required":["tag","shared"],"type":"object"}`,
		},
		{name: "no arguments", typ: reflect.TypeFor[struct{}](), want: `{"properties":{},"type":"object"}`},
		{name: "any object", typ: reflect.TypeFor[map[string]any](), want: `{"type":"object"}`},
		{name: "not an object", typ: reflect.TypeFor[string](), wantErr: "want a struct"},
		{name: "recursive", typ: reflect.TypeFor[node](), wantErr: "recursive"},
		{name: "channel field", typ: reflect.TypeFor[struct{ C chan int }](), wantErr: "field C"},
		{name: "map with bool keys", typ: reflect.TypeFor[struct{ M map[bool]int }](), wantErr: "map keys"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			schema, _, err := argsSchema(tc.typ)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(schema)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("schema\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestFunctionToolRun(t *testing.T) {
	type args struct {
		City string `json:"city"`
		Days int    `json:"days,omitempty"`
	}
	forecast := must[Tool](t)(NewFunctionTool("forecast", "Forecasts.", func(_ ToolContext, a args) (map[string]any, error) {
		if a.City == "nowhere" {
			return nil, errors.New("unknown city")
		}
		return map[string]any{"city": a.City, "days": a.Days}, nil
	}))
	scalar := must[Tool](t)(NewFunctionTool("scalar", "Returns a number.", func(_ ToolContext, _ struct{}) (int, error) { return 7, nil }))
	none := must[Tool](t)(NewLongRunningFunctionTool("start", "Starts.", func(_ ToolContext, _ struct{}) (*struct{}, error) { return nil, nil }))
	tests := []struct {
		name    string
		tool    Tool
		args    map[string]any
		want    string
		wantErr string
	}{
		{name: "ok", tool: forecast, args: map[string]any{"city": "Oslo", "days": 3.0}, want: `{"city":"Oslo","days":3}`},
		{name: "optional left out", tool: forecast, args: map[string]any{"city": "Oslo"}, want: `{"city":"Oslo","days":0}`},
		{name: "missing required", tool: forecast, args: map[string]any{"days": 3.0}, wantErr: `missing required argument "city"`},
		{name: "wrong type", tool: forecast, args: map[string]any{"city": 12.0}, wantErr: "invalid arguments"},
		{name: "function error", tool: forecast, args: map[string]any{"city": "nowhere"}, wantErr: "unknown city"},
		{name: "non-object result", tool: scalar, want: `{"result":7}`},
		{name: "null result", tool: none, want: `null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.tool.Run(nil, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(got); string(b) != tc.want {
				t.Fatalf("result %s, want %s", b, tc.want)
			}
		})
	}
	if !none.IsLongRunning() || forecast.IsLongRunning() {
		t.Error("long-running flags")
	}
	if d := forecast.Declaration(); d.Name != "forecast" || d.Description != "Forecasts." || d.Parameters["type"] != "object" {
		t.Errorf("declaration %+v", d)
	}
	if _, err := NewFunctionTool("bad", "", func(ToolContext, int) (int, error) { return 0, nil }); err == nil {
		t.Error("a non-object argument type was accepted")
	}
}

func call(id, name string, args map[string]any) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: name, Args: newStruct(args)}}}
}

func reply(id, name string, resp map[string]any) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name, Response: newStruct(resp)}}}
}

// newStruct is structpb.NewStruct for values known to convert.
func newStruct(m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return s
}

func content(role string, parts ...*agentrunnerv1.Part) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: role, Parts: parts}
}

// contentLines renders contents as "role: part | part" for comparisons.
func contentLines(contents []*agentrunnerv1.Content) []string {
	var out []string
	for _, c := range contents {
		var parts []string
		for _, p := range c.GetParts() {
			switch {
			case p.GetFunctionCall() != nil:
				parts = append(parts, "call "+p.GetFunctionCall().GetId()+" "+p.GetFunctionCall().GetName())
			case p.GetFunctionResponse() != nil:
				parts = append(parts, "response "+p.GetFunctionResponse().GetId()+" "+jsonOf(p.GetFunctionResponse().GetResponse()))
			default:
				parts = append(parts, p.GetText())
			}
		}
		out = append(out, c.GetRole()+": "+strings.Join(parts, " | "))
	}
	return out
}

func TestHistoryPairsFunctionResponses(t *testing.T) {
	ev := func(author string, c *agentrunnerv1.Content) *agentrunnerv1.Event {
		return &agentrunnerv1.Event{Author: author, Content: c}
	}
	tests := []struct {
		name   string
		events []*agentrunnerv1.Event
		want   []string
	}{
		{
			name: "parallel responses merged in call order",
			events: []*agentrunnerv1.Event{
				ev("user", userText("go")),
				ev("me", content(RoleModel, textPart("two calls"), call("a", "f", nil), call("b", "g", nil))),
				ev("me", content(RoleUser, reply("b", "g", map[string]any{"n": 2}))),
				ev("me", content(RoleUser, reply("a", "f", map[string]any{"n": 1}))),
				ev("me", modelText("done")),
			},
			want: []string{"user: go", "model: two calls | call a f | call b g", `user: response a {"n":1} | response b {"n":2}`, "model: done"},
		},
		{
			name: "a long-running response arriving later replaces the interim one, next to its call",
			events: []*agentrunnerv1.Event{
				ev("user", userText("refund")),
				ev("me", content(RoleModel, call("lr", "approve", nil))),
				ev("me", content(RoleUser, reply("lr", "approve", map[string]any{"status": "pending"}))),
				ev("user", content(RoleUser, reply("lr", "approve", map[string]any{"ok": true}))),
			},
			want: []string{"user: refund", "model: call lr approve", `user: response lr {"ok":true}`},
		},
		{
			name: "an abandoned call and a stray response are left out",
			events: []*agentrunnerv1.Event{
				ev("user", userText("refund")),
				ev("me", content(RoleModel, textPart("asking"), call("lr", "approve", nil))),
				ev("user", userText("never mind")),
				ev("user", content(RoleUser, reply("zz", "approve", nil))),
			},
			want: []string{"user: refund", "model: asking", "user: never mind"},
		},
		{
			name: "other agents' calls are context",
			events: []*agentrunnerv1.Event{
				ev("user", userText("hi")),
				ev("other", content(RoleModel, call("t", "transfer_to_agent", map[string]any{"agent_name": "me"}))),
				ev("other", content(RoleUser, reply("t", "transfer_to_agent", nil))),
			},
			want: []string{
				"user: hi",
				"user: For context: | [other] called tool `transfer_to_agent` with parameters: {\"agent_name\":\"me\"}",
				"user: For context: | [other] `transfer_to_agent` tool returned result: {}",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := contentLines(historyContents("me", tc.events)); !equalStrings(got, tc.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestCurrentTurn(t *testing.T) {
	ev := func(author string, c *agentrunnerv1.Content) *agentrunnerv1.Event {
		return &agentrunnerv1.Event{Author: author, Content: c}
	}
	old := []*agentrunnerv1.Event{ev("user", userText("old")), ev("me", modelText("old answer"))}
	tests := []struct {
		name   string
		events []*agentrunnerv1.Event
		want   []string
	}{
		{name: "the user's message", events: append(old[:2:2], ev("user", userText("new"))), want: []string{"user: new"}},
		{
			name:   "another agent's output",
			events: append(old[:2:2], ev("user", userText("new")), ev("writer", modelText("draft"))),
			want:   []string{"user: For context: | [writer] said: draft"},
		},
		{
			name: "a transfer leads back to the user's message",
			events: append(old[:2:2], ev("user", userText("new")),
				ev("root", content(RoleModel, call("t", "transfer_to_agent", nil))), ev("root", content(RoleUser, reply("t", "transfer_to_agent", nil)))),
			want: []string{"user: new", "user: For context: | [root] called tool `transfer_to_agent` with parameters: {}", "user: For context: | [root] `transfer_to_agent` tool returned result: {}"},
		},
		{
			name: "a long-running response leads back to the message that started the call",
			events: append(old[:2:2], ev("user", userText("new")), ev("me", content(RoleModel, call("lr", "approve", nil))),
				ev("user", content(RoleUser, reply("lr", "approve", map[string]any{"ok": true})))),
			want: []string{"user: new", "model: call lr approve", `user: response lr {"ok":true}`},
		},
		{name: "nothing", events: nil, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := contentLines(historyContents("me", currentTurn("me", tc.events))); !equalStrings(got, tc.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestTransferTargets(t *testing.T) {
	// root (llm)
	// ├── a (llm) ── a1 (llm)
	// ├── b (llm, disallows transfer to parent)
	// ├── c (llm, disallows transfer to peers)
	// └── seq (sequential) ── s1 (llm)
	a1 := llm(t, LLMConfig{Name: "a1"})
	a := llm(t, LLMConfig{Name: "a", SubAgents: []Agent{a1}})
	b := llm(t, LLMConfig{Name: "b", DisallowTransferToParent: true})
	c := llm(t, LLMConfig{Name: "c", DisallowTransferToPeers: true})
	s1 := llm(t, LLMConfig{Name: "s1"})
	seq := must[Agent](t)(NewSequential(WorkflowConfig{Name: "seq", SubAgents: []Agent{s1}}))
	root := llm(t, LLMConfig{Name: "root", SubAgents: []Agent{a, b, c, seq}})
	tr := must[*tree](t)(newTree(root))
	tests := []struct {
		agent Agent
		want  []string
	}{
		{root, []string{"a", "b", "c", "seq"}},
		{a, []string{"a1", "root", "b", "c", "seq"}},
		{b, []string{"a", "c", "seq"}},
		{c, []string{"root"}},
		{a1, []string{"a"}},
		{s1, nil}, // a workflow parent keeps its order
	}
	for _, tc := range tests {
		t.Run(tc.agent.Name(), func(t *testing.T) {
			var got []string
			for _, x := range transferTargets(tr, tc.agent) {
				got = append(got, x.Name())
			}
			if !equalStrings(got, tc.want) {
				t.Fatalf("targets %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewLLMAgentRejectsBadTools(t *testing.T) {
	tool := func(name string) Tool {
		return must[Tool](t)(NewFunctionTool(name, "", func(ToolContext, struct{}) (any, error) { return nil, nil }))
	}
	tests := []struct {
		name string
		cfg  LLMConfig
		want string
	}{
		{name: "nil tool", cfg: LLMConfig{Tools: []Tool{nil}}, want: "tool 0 is nil"},
		{name: "duplicate", cfg: LLMConfig{Tools: []Tool{tool("x"), tool("x")}}, want: `duplicate tool name "x"`},
		{name: "reserved", cfg: LLMConfig{Tools: []Tool{tool(ToolTransferToAgent)}}, want: "reserved"},
		{name: "include contents", cfg: LLMConfig{IncludeContents: 42}, want: "unknown IncludeContents"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Name, tc.cfg.Model = "a", &fakeModel{name: "fake"}
			if _, err := NewLLMAgent(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
