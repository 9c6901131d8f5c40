package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// fromMessage converts a complete message: text and tool use blocks, and
// thinking as thoughts carrying their signature, so that they can go back
// to the model in the next turn as the API requires when tools are used.
func fromMessage(msg *anthropic.Message) (*model.Response, error) {
	content := &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{}}
	var (
		citations []*agentrunnerv1.Citation
		textLen   int32
	)
	for i, b := range msg.Content {
		if b.Type == "text" {
			// A text block's citations support that block: its span
			// in the answer's text, the parts' text joined.
			citations = append(citations, fromCitations(b.Citations, textLen, textLen+int32(len(b.Text)))...)
			textLen += int32(len(b.Text))
		}
		p, err := fromBlock(b)
		if err != nil {
			return nil, model.Unavailable("content block %d: %w", i, err)
		}
		if p != nil {
			content.Parts = append(content.Parts, p)
		}
	}
	resp := &model.Response{
		Content:      content,
		TurnComplete: true,
		FinishReason: stopReason(msg.StopReason),
		Usage:        toUsage(msg.Usage),
		ModelVersion: string(msg.Model),
	}
	if len(citations) > 0 {
		resp.Citations = &agentrunnerv1.CitationMetadata{Citations: citations}
	}
	if resp.FinishReason != "" && resp.FinishReason != model.FinishStop {
		resp.ErrorCode = resp.FinishReason
		resp.ErrorMessage = describeStop(msg.StopReason)
	}
	return resp, nil
}

// fromBlock converts one content block, or returns nil for a kind
// agentrunner.v1.Part cannot hold (redacted thinking, server tool blocks).
func fromBlock(b anthropic.ContentBlockUnion) (*agentrunnerv1.Part, error) {
	switch b.Type {
	case "text":
		if b.Text == "" {
			return nil, nil
		}
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: b.Text}}, nil
	case "thinking":
		p := &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: b.Thinking}, Thought: true}
		if b.Signature != "" {
			p.ThoughtSignature = []byte(b.Signature)
		}
		return p, nil
	case "tool_use":
		args := map[string]any{}
		if raw := strings.TrimSpace(string(b.Input)); raw != "" {
			if err := json.Unmarshal(b.Input, &args); err != nil {
				return nil, fmt.Errorf("tool_use %q input is not a JSON object: %w", b.Name, err)
			}
		}
		s, err := structpb.NewStruct(args)
		if err != nil {
			return nil, fmt.Errorf("tool_use %q input: %w", b.Name, err)
		}
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{
			Id: b.ID, Name: b.Name, Args: s,
		}}}, nil
	}
	return nil, nil
}

// stopReason maps Anthropic's stop reasons to Gemini's finish reasons; an
// unknown one is kept, upper-cased, so that it still reads as a code.
func stopReason(r anthropic.StopReason) string {
	switch r {
	case "":
		return ""
	case anthropic.StopReasonEndTurn, anthropic.StopReasonToolUse, anthropic.StopReasonStopSequence, anthropic.StopReasonPauseTurn:
		return model.FinishStop
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		return model.FinishMaxTokens
	case anthropic.StopReasonRefusal:
		return model.FinishSafety
	default:
		return strings.ToUpper(string(r))
	}
}

func describeStop(r anthropic.StopReason) string {
	switch r {
	case anthropic.StopReasonMaxTokens:
		return "the response reached the maximum number of output tokens"
	case anthropic.StopReasonModelContextWindowExceeded:
		return "the response reached the end of the model's context window"
	case anthropic.StopReasonRefusal:
		return "the model refused to answer"
	default:
		return fmt.Sprintf("the model stopped early (%s)", r)
	}
}

// toUsage converts token counts. Anthropic counts cache reads and writes
// apart from input_tokens; Gemini's prompt count, whose field this is,
// includes cached tokens, so they are added, and cache reads are the cached
// count. Thinking tokens are counted apart from the answer, as Gemini does.
func toUsage(u anthropic.Usage) *agentrunnerv1.UsageMetadata {
	prompt := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	thinking := u.OutputTokensDetails.ThinkingTokens
	if prompt == 0 && u.OutputTokens == 0 {
		return nil
	}
	return &agentrunnerv1.UsageMetadata{
		PromptTokenCount:        int32(prompt),
		CandidatesTokenCount:    int32(u.OutputTokens - thinking),
		ThoughtsTokenCount:      int32(thinking),
		CachedContentTokenCount: int32(u.CacheReadInputTokens),
		TotalTokenCount:         int32(prompt + u.OutputTokens),
		CacheCreationTokenCount: int32(u.CacheCreationInputTokens),
		TrafficType:             strings.ToUpper(string(u.ServiceTier)),
	}
}

// fromCitations converts a text block's citations. Anthropic cites
// documents (by title or file) and web pages (by URL); either is the
// source, and the block's span in the answer is what it supports.
func fromCitations(cs []anthropic.TextCitationUnion, start, end int32) []*agentrunnerv1.Citation {
	var out []*agentrunnerv1.Citation
	for _, c := range cs {
		uri, title := c.URL, c.Title
		if uri == "" && c.FileID != "" {
			uri = "file:" + c.FileID
		}
		if title == "" {
			title = c.DocumentTitle
		}
		if uri == "" && title == "" {
			continue
		}
		out = append(out, &agentrunnerv1.Citation{StartIndex: start, EndIndex: end, Uri: uri, Title: title})
	}
	return out
}
