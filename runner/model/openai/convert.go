package openai

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// This file is the OpenAI boundary for requests: agentrunner.v1 contents
// become Chat Completions messages here and nowhere else.
//
// Chat Completions has no place for some of what a Content may hold, so:
// thought parts are not sent back (the API takes no reasoning as input);
// inline images go as data URLs and image file URIs as image URLs; other
// binary data is described in a text part rather than dropped, so that the
// model knows something was there.

// toParams builds the request body for one call.
func (m *Model) toParams(name string, req *model.Request, stream bool) (openai.ChatCompletionNewParams, error) {
	msgs, err := toMessages(req.SystemInstruction, req.Contents)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	p := openai.ChatCompletionNewParams{Model: name, Messages: msgs, Tools: toTools(req.Tools)}
	if stream {
		// Without this the stream carries no usage at all.
		p.StreamOptions.IncludeUsage = openai.Bool(true)
	}
	c := req.Config
	if c == nil {
		return p, nil
	}
	if c.Temperature != nil {
		p.Temperature = openai.Float(model.Widen(*c.Temperature))
	}
	if c.TopP != nil {
		p.TopP = openai.Float(model.Widen(*c.TopP))
	}
	if c.MaxOutputTokens > 0 {
		// OpenAI's reasoning models refuse max_tokens; older servers that
		// speak the same protocol only know it.
		if m.legacyMaxTokens {
			p.MaxTokens = openai.Int(int64(c.MaxOutputTokens))
		} else {
			p.MaxCompletionTokens = openai.Int(int64(c.MaxOutputTokens))
		}
	}
	if len(c.StopSequences) > 0 {
		p.Stop.OfStringArray = append([]string(nil), c.StopSequences...)
	}
	if c.ResponseMIMEType == "application/json" {
		p.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
	}
	return p, nil
}

// toMessages converts the system instruction and the conversation.
func toMessages(system string, contents []*agentrunnerv1.Content) ([]openai.ChatCompletionMessageParamUnion, error) {
	var out []openai.ChatCompletionMessageParamUnion
	if system != "" {
		out = append(out, openai.SystemMessage(system))
	}
	for i, c := range contents {
		msgs, err := toContentMessages(c)
		if err != nil {
			return nil, fmt.Errorf("contents[%d]: %w", i, err)
		}
		out = append(out, msgs...)
	}
	return out, nil
}

// toContentMessages converts one Content. A model turn is one assistant
// message carrying its text and all its tool calls (parallel calls stay
// together, as the API requires). A user turn becomes one tool message per
// function response, which the API requires right after the assistant
// message that made the calls, then a user message with the rest.
func toContentMessages(c *agentrunnerv1.Content) ([]openai.ChatCompletionMessageParamUnion, error) {
	if c == nil || len(c.GetParts()) == 0 {
		return nil, nil
	}
	if c.GetRole() == "model" {
		msg, err := toAssistant(c)
		if err != nil || msg == nil {
			return nil, err
		}
		return []openai.ChatCompletionMessageParamUnion{{OfAssistant: msg}}, nil
	}
	var out []openai.ChatCompletionMessageParamUnion
	var parts []openai.ChatCompletionContentPartUnionParam
	for _, p := range c.GetParts() {
		if fr := p.GetFunctionResponse(); fr != nil {
			body, err := json.Marshal(model.JSONObject(fr.GetResponse()))
			if err != nil {
				return nil, fmt.Errorf("function response %q: %w", fr.GetName(), err)
			}
			out = append(out, openai.ToolMessage(string(body), callID(fr.GetId(), fr.GetName())))
			continue
		}
		if cp, ok := toUserPart(p); ok {
			parts = append(parts, cp)
		}
	}
	if len(parts) > 0 {
		out = append(out, openai.ChatCompletionMessageParamUnion{OfUser: &openai.ChatCompletionUserMessageParam{
			Content: openai.ChatCompletionUserMessageParamContentUnion{OfArrayOfContentParts: parts},
		}})
	}
	return out, nil
}

// toAssistant converts a model turn, or returns nil when nothing of it can
// be sent (only thoughts).
func toAssistant(c *agentrunnerv1.Content) (*openai.ChatCompletionAssistantMessageParam, error) {
	msg := &openai.ChatCompletionAssistantMessageParam{}
	var text strings.Builder
	for _, p := range c.GetParts() {
		if p.GetThought() {
			continue
		}
		switch d := p.GetData().(type) {
		case *agentrunnerv1.Part_Text:
			text.WriteString(d.Text)
		case *agentrunnerv1.Part_FunctionCall:
			args, err := json.Marshal(model.JSONObject(d.FunctionCall.GetArgs()))
			if err != nil {
				return nil, fmt.Errorf("function call %q: %w", d.FunctionCall.GetName(), err)
			}
			msg.ToolCalls = append(msg.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: callID(d.FunctionCall.GetId(), d.FunctionCall.GetName()),
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name: d.FunctionCall.GetName(), Arguments: string(args),
					},
				},
			})
		default:
			if s := describeData(p); s != "" {
				text.WriteString(s)
			}
		}
	}
	if text.Len() > 0 {
		msg.Content.OfString = openai.String(text.String())
	}
	if text.Len() == 0 && len(msg.ToolCalls) == 0 {
		return nil, nil
	}
	return msg, nil
}

// toUserPart converts one part of a user turn.
func toUserPart(p *agentrunnerv1.Part) (openai.ChatCompletionContentPartUnionParam, bool) {
	switch d := p.GetData().(type) {
	case *agentrunnerv1.Part_Text:
		if d.Text == "" || p.GetThought() {
			return openai.ChatCompletionContentPartUnionParam{}, false
		}
		return openai.TextContentPart(d.Text), true
	case *agentrunnerv1.Part_InlineData:
		if strings.HasPrefix(d.InlineData.GetMimeType(), "image/") {
			url := "data:" + d.InlineData.GetMimeType() + ";base64," + base64.StdEncoding.EncodeToString(d.InlineData.GetData())
			return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: url}), true
		}
	case *agentrunnerv1.Part_FileData:
		if strings.HasPrefix(d.FileData.GetMimeType(), "image/") {
			return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: d.FileData.GetFileUri()}), true
		}
	case *agentrunnerv1.Part_FunctionCall:
		// A call in a user turn is not something a user can make; say
		// what it was rather than invent a tool call the model did not
		// make.
		return openai.TextContentPart(fmt.Sprintf("[function call %s]", d.FunctionCall.GetName())), true
	}
	if s := describeData(p); s != "" {
		return openai.TextContentPart(s), true
	}
	return openai.ChatCompletionContentPartUnionParam{}, false
}

// describeData names binary data the API cannot take in this position.
func describeData(p *agentrunnerv1.Part) string {
	switch d := p.GetData().(type) {
	case *agentrunnerv1.Part_InlineData:
		return fmt.Sprintf("[%s data %q, %d bytes, not shown]", d.InlineData.GetMimeType(), d.InlineData.GetDisplayName(), len(d.InlineData.GetData()))
	case *agentrunnerv1.Part_FileData:
		return fmt.Sprintf("[%s file %s]", d.FileData.GetMimeType(), d.FileData.GetFileUri())
	}
	return ""
}

// callID is the id a call and its response are paired by. The runner gives
// every call an id before it is stored, so an empty one only comes from a
// history written elsewhere; the name then pairs them, which holds as long
// as one turn does not call the same function twice.
func callID(id, name string) string {
	if id != "" {
		return id
	}
	return "call_" + name
}

// toTools declares the functions. A function without parameters gets an
// empty object schema: some servers speaking this protocol refuse a tool
// without one.
func toTools(decls []*model.FunctionDeclaration) []openai.ChatCompletionToolUnionParam {
	var out []openai.ChatCompletionToolUnionParam
	for _, d := range decls {
		if d == nil {
			continue
		}
		params := d.Parameters
		if params == nil {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		fd := shared.FunctionDefinitionParam{Name: d.Name, Parameters: params}
		if d.Description != "" {
			fd.Description = openai.String(d.Description)
		}
		out = append(out, openai.ChatCompletionFunctionTool(fd))
	}
	return out
}
