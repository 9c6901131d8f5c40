package main

import (
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	"google.golang.org/protobuf/types/known/structpb"
)

func textOf(c *agentrunnerv1.Content) string {
	var b strings.Builder
	for _, p := range c.GetParts() {
		b.WriteString(p.GetText())
	}
	return b.String()
}

func structArgs(m map[string]any) (*structpb.Struct, error) { return structpb.NewStruct(m) }

// toolResult returns the word count when the request's last content
// answers a word_count call.
func toolResult(req *model.Request) (any, bool) {
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.GetParts() {
		if fr := p.GetFunctionResponse(); fr != nil {
			return fr.GetResponse().AsMap()["words"], true
		}
	}
	return nil, false
}

// userText returns the text of the user's latest message, skipping the
// other agents' turns, which the LLM agent passes on as "For context:".
func userText(req *model.Request) string {
	for i := len(req.Contents) - 1; i >= 0; i-- {
		c := req.Contents[i]
		if c.GetRole() != "user" || len(c.GetParts()) == 0 || c.GetParts()[0].GetText() == "For context:" {
			continue
		}
		if t := textOf(c); t != "" {
			return t
		}
	}
	return ""
}
