package llmagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/types/known/structpb"
)

func textPart(s string) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: s}}
}

// textOf concatenates the non-thought text parts of c.
func textOf(c *agentrunnerv1.Content) string {
	var sb strings.Builder
	for _, p := range c.GetParts() {
		if t, ok := p.GetData().(*agentrunnerv1.Part_Text); ok && !p.GetThought() {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}

// placeholder matches {name} and {name?} where name is a state key,
// optionally scoped.
var placeholder = regexp.MustCompile(`\{((?:app:|user:|temp:)?[A-Za-z_][A-Za-z0-9_]*)(\?)?\}`)

// errMissingState is wrapped by instruction errors naming a missing key.
var errMissingState = errors.New("state key missing")

// renderInstruction fills {key} placeholders from state.
func renderInstruction(instr string, state agent.State) (string, error) {
	if !strings.Contains(instr, "{") {
		return instr, nil
	}
	var err error
	out := placeholder.ReplaceAllStringFunc(instr, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		key, optional := sub[1], sub[2] == "?"
		v, ok := state.Get(key)
		if !ok {
			if !optional && err == nil {
				err = fmt.Errorf("instruction placeholder {%s}: %w: %w", key, errMissingState, store.ErrInvalidArgument)
			}
			return ""
		}
		if s, ok := v.GetKind().(*structpb.Value_StringValue); ok {
			return s.StringValue
		}
		b, jerr := json.Marshal(v.AsInterface())
		if jerr != nil {
			return v.String()
		}
		return string(b)
	})
	return out, err
}
