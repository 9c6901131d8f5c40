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

// Stop reasons are reported in Gemini's words, which the runner and its
// callers already know: "STOP" is a normal end (a tool call included),
// anything else is an answer cut short and becomes the event's error code.
const (
	finishStop      = "STOP"
	finishMaxTokens = "MAX_TOKENS"
	finishSafety    = "SAFETY"
)

// fromMessage converts a complete message: text and tool use blocks, and
// thinking as thoughts carrying their signature, so that they can go back
// to the model in the next turn as the API requires when tools are used.
func fromMessage(msg *anthropic.Message) (*model.Response, error) {
	content := &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{}}
	for i, b := range msg.Content {
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
	if resp.FinishReason != "" && resp.FinishReason != finishStop {
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
		return finishStop
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		return finishMaxTokens
	case anthropic.StopReasonRefusal:
		return finishSafety
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
	}
}
