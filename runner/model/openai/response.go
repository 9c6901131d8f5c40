package openai

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// accumulator builds the complete Response of a call from one completion
// or from every chunk of a stream. Only the first choice is read: the
// runner continues one conversation.
type accumulator struct {
	text      strings.Builder
	refusal   strings.Builder
	calls     []*toolCall
	finish    string
	usage     *openai.CompletionUsage
	model     string
	tier      string
	citations []*agentrunnerv1.Citation
	sawChoice bool
}

// toolCall is one function call being assembled. A stream sends its id
// and name once and its arguments in pieces, keyed by index; parallel
// calls have distinct indexes.
type toolCall struct {
	index int64
	id    string
	name  string
	args  strings.Builder
}

// addCompletion records a unary answer.
func (a *accumulator) addCompletion(c *openai.ChatCompletion) {
	a.model = c.Model
	if c.JSON.Usage.Valid() {
		a.usage = &c.Usage
	}
	if len(c.Choices) == 0 {
		return
	}
	a.sawChoice = true
	ch := c.Choices[0]
	a.finish = ch.FinishReason
	a.tier = string(c.ServiceTier)
	a.addAnnotations(ch.Message.Annotations)
	a.text.WriteString(ch.Message.Content)
	a.refusal.WriteString(ch.Message.Refusal)
	for i, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never declared by us
		}
		call := &toolCall{index: int64(i), id: tc.ID, name: tc.Function.Name}
		call.args.WriteString(tc.Function.Arguments)
		a.calls = append(a.calls, call)
	}
}

// addChunk records one streamed chunk and returns the answer text it
// carries, which the caller streams as a partial.
func (a *accumulator) addChunk(c *openai.ChatCompletionChunk) string {
	if c.Model != "" {
		a.model = c.Model
	}
	if c.ServiceTier != "" {
		a.tier = string(c.ServiceTier)
	}
	if c.JSON.Usage.Valid() {
		// Sent once, in a last chunk with no choices.
		u := c.Usage
		a.usage = &u
	}
	var text string
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		a.sawChoice = true
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
		text = ch.Delta.Content
		a.addAnnotations(chunkAnnotations(ch.Delta))
		a.text.WriteString(text)
		a.refusal.WriteString(ch.Delta.Refusal)
		for _, d := range ch.Delta.ToolCalls {
			call := a.call(d.Index)
			if d.ID != "" {
				call.id = d.ID
			}
			if d.Function.Name != "" {
				call.name = d.Function.Name
			}
			call.args.WriteString(d.Function.Arguments)
		}
	}
	return text
}

func (a *accumulator) call(index int64) *toolCall {
	for _, c := range a.calls {
		if c.index == index {
			return c
		}
	}
	c := &toolCall{index: index}
	a.calls = append(a.calls, c)
	return c
}

// usageSoFar is the usage the stream reported, nil when it reported none.
func (a *accumulator) usageSoFar() *agentrunnerv1.UsageMetadata {
	if a.usage == nil {
		return nil
	}
	return toUsage(a.usage, a.tier)
}

// response returns the complete Response, or an error when there is none
// to give: no choice at all is a broken answer, and a later attempt may do
// better.
func (a *accumulator) response() (*model.Response, error) {
	if !a.sawChoice {
		return nil, model.Unavailable("the API returned no choices")
	}
	resp := &model.Response{
		TurnComplete: true,
		FinishReason: finishReason(a.finish),
		Usage:        toUsage(a.usage, a.tier),
		ModelVersion: a.model,
	}
	if len(a.citations) > 0 {
		resp.Citations = &agentrunnerv1.CitationMetadata{Citations: a.citations}
	}
	content := &agentrunnerv1.Content{Role: "model"}
	if a.text.Len() > 0 {
		content.Parts = append(content.Parts, textPart(a.text.String()))
	}
	if a.refusal.Len() > 0 {
		content.Parts = append(content.Parts, textPart(a.refusal.String()))
		resp.FinishReason = model.FinishSafety
		resp.ErrorCode, resp.ErrorMessage = model.FinishSafety, "the model refused: "+a.refusal.String()
	}
	slices.SortStableFunc(a.calls, func(x, y *toolCall) int { return int(x.index - y.index) })
	for _, c := range a.calls {
		p, err := callPart(c)
		if err != nil {
			resp.FinishReason = model.FinishMalformedCall
			resp.ErrorCode, resp.ErrorMessage = model.FinishMalformedCall, err.Error()
			continue
		}
		content.Parts = append(content.Parts, p)
	}
	resp.Content = content
	if resp.ErrorCode == "" && resp.FinishReason != "" && resp.FinishReason != model.FinishStop {
		resp.ErrorCode = resp.FinishReason
		resp.ErrorMessage = describeFinish(a.finish)
	}
	return resp, nil
}

// callPart converts an assembled call. Arguments that are not a JSON
// object are the model's mistake, reported in band like Gemini's
// MALFORMED_FUNCTION_CALL rather than passed to a tool.
func callPart(c *toolCall) (*agentrunnerv1.Part, error) {
	args := map[string]any{}
	if raw := strings.TrimSpace(c.args.String()); raw != "" {
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			return nil, fmt.Errorf("the arguments of the call to %q are not a JSON object: %v", c.name, err)
		}
	}
	s, err := structpb.NewStruct(args)
	if err != nil {
		return nil, fmt.Errorf("the arguments of the call to %q: %v", c.name, err)
	}
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{
		Id: c.id, Name: c.name, Args: s,
	}}}, nil
}

func textPart(s string) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: s}}
}

// finishReason maps OpenAI's finish reasons to Gemini's; a reason it does
// not know is kept, upper-cased, so that it still reads as a code.
func finishReason(r string) string {
	switch r {
	case "":
		return ""
	case "stop", "tool_calls", "function_call":
		return model.FinishStop
	case "length":
		return model.FinishMaxTokens
	case "content_filter":
		return model.FinishSafety
	default:
		return strings.ToUpper(r)
	}
}

func describeFinish(r string) string {
	switch r {
	case "length":
		return "the response reached the maximum number of output tokens"
	case "content_filter":
		return "the response was stopped by the provider's content filter"
	default:
		return fmt.Sprintf("the model stopped early (%s)", r)
	}
}

// toUsage converts token counts. OpenAI counts reasoning tokens inside
// completion_tokens; Gemini, whose fields these are, counts thoughts apart,
// so they are moved to thoughts. Cached prompt tokens stay inside the
// prompt count, as Gemini's cached_content_token_count does. The service
// tier is how the call was billed.
func toUsage(u *openai.CompletionUsage, tier string) *agentrunnerv1.UsageMetadata {
	if u == nil {
		return nil
	}
	pd, cd := u.PromptTokensDetails, u.CompletionTokensDetails
	reasoning := cd.ReasoningTokens
	return &agentrunnerv1.UsageMetadata{
		PromptTokenCount:        int32(u.PromptTokens),
		CandidatesTokenCount:    int32(u.CompletionTokens - reasoning),
		ThoughtsTokenCount:      int32(reasoning),
		CachedContentTokenCount: int32(pd.CachedTokens),
		TotalTokenCount:         int32(u.TotalTokens),
		CacheCreationTokenCount: int32(pd.CacheWriteTokens),
		PromptTokensDetails: modalities(
			count{"TEXT", pd.TextTokens}, count{"AUDIO", pd.AudioTokens}, count{"IMAGE", pd.ImageTokens}),
		CandidatesTokensDetails: modalities(count{"TEXT", cd.TextTokens}, count{"AUDIO", cd.AudioTokens}),
		TrafficType:             strings.ToUpper(tier),
	}
}

// count is the token count of one modality, in Gemini's modality names.
type count struct {
	modality string
	n        int64
}

// modalities lists the counts that are not zero.
func modalities(cs ...count) []*agentrunnerv1.ModalityTokenCount {
	var out []*agentrunnerv1.ModalityTokenCount
	for _, c := range cs {
		if c.n > 0 {
			out = append(out, &agentrunnerv1.ModalityTokenCount{Modality: c.modality, TokenCount: int32(c.n)})
		}
	}
	return out
}

// addAnnotations keeps the URL citations of the answer: web search models
// say which span of the text quotes which page.
func (a *accumulator) addAnnotations(as []openai.ChatCompletionMessageAnnotation) {
	for _, an := range as {
		c := an.URLCitation
		if c.URL == "" {
			continue
		}
		a.citations = append(a.citations, &agentrunnerv1.Citation{
			StartIndex: int32(c.StartIndex), EndIndex: int32(c.EndIndex), Uri: c.URL, Title: c.Title,
		})
	}
}

// chunkAnnotations reads the annotations a streamed delta carries. The
// SDK's delta type has no field for them, though the API sends them there
// as in a whole message, so they are read from the delta's extra fields.
func chunkAnnotations(d openai.ChatCompletionChunkChoiceDelta) []openai.ChatCompletionMessageAnnotation {
	f, ok := d.JSON.ExtraFields["annotations"]
	if !ok || f.Raw() == "" || f.Raw() == "null" {
		return nil
	}
	var as []openai.ChatCompletionMessageAnnotation
	if err := json.Unmarshal([]byte(f.Raw()), &as); err != nil {
		return nil
	}
	return as
}
