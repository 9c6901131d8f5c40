package llmagent

import (
	"encoding/json"
	"iter"
	"maps"
	"slices"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"google.golang.org/protobuf/types/known/structpb"
)

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

func userText(s string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: agent.RoleUser, Parts: []*agentrunnerv1.Part{textPart(s)}}
}

func modelText(s string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: agent.RoleModel, Parts: []*agentrunnerv1.Part{textPart(s)}}
}

func functionCall(id, name string) *agentrunnerv1.Content {
	return content(agent.RoleModel, call(id, name, nil))
}

func functionResponse(id, name string) *agentrunnerv1.Content {
	return content(agent.RoleUser, reply(id, name, nil))
}

func equalStrings(a, b []string) bool { return slices.Equal(a, b) }

// mapState is an agent.State over a map, for instruction rendering.
type mapState map[string]*structpb.Value

func newMapState(t *testing.T, m map[string]any) mapState {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return mapState(s.GetFields())
}

func (s mapState) Get(key string) (*structpb.Value, bool) { v, ok := s[key]; return v, ok }
func (s mapState) Set(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var val structpb.Value
	if err := val.UnmarshalJSON(b); err != nil {
		return err
	}
	s[key] = &val
	return nil
}
func (s mapState) All() iter.Seq2[string, *structpb.Value] {
	return maps.All(map[string]*structpb.Value(s))
}

var _ = strings.Join
