package anthropic

import (
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

var generateCases = []pt.GenerateCase{
	{
		Name:  "text",
		Reply: pt.JSON(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-fake-1","content":[{"type":"text","text":"Hello!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":3,"cache_read_input_tokens":5,"cache_creation_input_tokens":2}}`),
		Want: []*model.Response{{
			Content: pt.ModelContent(pt.Text("Hello!")), TurnComplete: true, FinishReason: "STOP", ModelVersion: "claude-fake-1",
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 17, CandidatesTokenCount: 3, CachedContentTokenCount: 5, TotalTokenCount: 20, CacheCreationTokenCount: 2},
		}},
	},
	{
		// A cited text block supports its own span of the answer; web
		// pages are cited by URL, documents by title; the tier is kept.
		Name:  "citations and tier",
		Reply: pt.JSON(`{"id":"msg_c","type":"message","role":"assistant","model":"claude-fake-1","content":[{"type":"text","text":"Intro. "},{"type":"text","text":"Oslo is cold.","citations":[{"type":"web_search_result_location","url":"https://example.com/oslo","title":"Oslo","cited_text":"cold","encrypted_index":"x"},{"type":"char_location","document_title":"Almanac","document_index":0,"start_char_index":1,"end_char_index":5,"cited_text":"cold"}]}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":3,"service_tier":"priority"}}`),
		Want: []*model.Response{{
			Content: pt.ModelContent(pt.Text("Intro. "), pt.Text("Oslo is cold.")), TurnComplete: true, FinishReason: "STOP", ModelVersion: "claude-fake-1",
			Citations: &agentrunnerv1.CitationMetadata{Citations: []*agentrunnerv1.Citation{
				{StartIndex: 7, EndIndex: 20, Uri: "https://example.com/oslo", Title: "Oslo"},
				{StartIndex: 7, EndIndex: 20, Title: "Almanac"},
			}},
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 3, TotalTokenCount: 13, TrafficType: "PRIORITY"},
		}},
	},
	{
		Name:  "parallel tool use with thinking",
		Reply: pt.JSON(`{"id":"msg_2","type":"message","role":"assistant","model":"claude-fake-1","content":[{"type":"thinking","thinking":"two cities","signature":"sig-A"},{"type":"text","text":"Checking both."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Oslo"}}],"stop_reason":"tool_use","usage":{"input_tokens":30,"output_tokens":20}}`),
		Want: []*model.Response{{
			Content: pt.ModelContent(&agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "two cities"}, Thought: true, ThoughtSignature: []byte("sig-A")},
				pt.Text("Checking both."),
				pt.Call("toolu_1", "get_weather", map[string]any{"city": "Paris"}),
				pt.Call("toolu_2", "get_weather", map[string]any{"city": "Oslo"})),
			TurnComplete: true, FinishReason: "STOP", ModelVersion: "claude-fake-1",
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 30, CandidatesTokenCount: 20, TotalTokenCount: 50},
		}},
	},
	{
		Name:   "stream text",
		Stream: true,
		Reply:  sse.Answer(evStart, evTextStart, evPing, evTextHel, evTextLo, evStop0, evDeltaEnd, evMsgStop),
		Want: []*model.Response{
			pt.Partial("claude-fake-1", "Hel"),
			pt.Partial("claude-fake-1", "lo"),
			{Content: pt.ModelContent(pt.Text("Hello")), TurnComplete: true, FinishReason: "STOP", ModelVersion: "claude-fake-1",
				Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 16, CandidatesTokenCount: 7, CachedContentTokenCount: 4, TotalTokenCount: 23}},
		},
	},
	{
		Name:   "stream parallel tool use",
		Stream: true,
		Reply: sse.Answer(evStart,
			`content_block_start: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}}`,
			`content_block_delta: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`,
			`content_block_delta: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"Oslo\"}"}}`,
			`content_block_stop: {"type":"content_block_stop","index":0}`,
			`content_block_start: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_b","name":"get_time","input":{}}}`,
			`content_block_delta: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"tz\":\"CET\"}"}}`,
			`content_block_stop: {"type":"content_block_stop","index":1}`,
			`message_delta: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}`,
			evMsgStop),
		Want: []*model.Response{{
			Content:      pt.ModelContent(pt.Call("toolu_a", "get_weather", map[string]any{"city": "Oslo"}), pt.Call("toolu_b", "get_time", map[string]any{"tz": "CET"})),
			TurnComplete: true, FinishReason: "STOP", ModelVersion: "claude-fake-1",
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 16, CandidatesTokenCount: 30, CachedContentTokenCount: 4, TotalTokenCount: 46},
		}},
	},
	{
		Name:  "max tokens keeps the truncated answer",
		Reply: pt.JSON(`{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"The answer is"}],"stop_reason":"max_tokens","usage":{"input_tokens":1,"output_tokens":4}}`),
		Want: []*model.Response{{Content: pt.ModelContent(pt.Text("The answer is")), TurnComplete: true, FinishReason: "MAX_TOKENS", ModelVersion: "c",
			ErrorCode: "MAX_TOKENS", ErrorMessage: "maximum number of output tokens",
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 1, CandidatesTokenCount: 4, TotalTokenCount: 5}}},
	},
	{
		Name:  "refusal",
		Reply: pt.JSON(`{"id":"m","type":"message","role":"assistant","model":"c","content":[],"stop_reason":"refusal","usage":{"input_tokens":1,"output_tokens":0}}`),
		Want: []*model.Response{{Content: pt.ModelContent(), TurnComplete: true, FinishReason: "SAFETY", ModelVersion: "c",
			ErrorCode: "SAFETY", ErrorMessage: "refused", Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 1, TotalTokenCount: 1}}},
	},
}

// TestGenerate runs each answer through the real SDK: one request, to
// the Messages path with the Config's key and an API version.
func TestGenerate(t *testing.T) {
	pt.RunGenerate(t, provider, generateCases, func(t *testing.T, r pt.Request, stream bool) {
		if r.Path != "/v1/messages" || r.Header.Get("X-Api-Key") != pt.APIKey || r.Header.Get("Anthropic-Version") == "" {
			t.Fatalf("request %+v, want POST /v1/messages with the Config's key and a version", r)
		}
		if (r.Body["stream"] == true) != stream {
			t.Errorf("body stream = %v, want %v", r.Body["stream"], stream)
		}
	})
}

const textReply = `{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`

// TestRequest checks the body for a system instruction, a model turn with
// a signed thought and parallel calls, their results (merged into one user
// turn, ahead of the user's text), tools and generation settings.
func TestRequest(t *testing.T) {
	temp, topK := float32(0.2), float32(5)
	req := &model.Request{
		SystemInstruction: "Be brief.",
		Contents: []*agentrunnerv1.Content{
			pt.UserContent(pt.Text("weather?")),
			pt.ModelContent(&agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "two"}, Thought: true, ThoughtSignature: []byte("sig")},
				&agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "unsigned"}, Thought: true},
				pt.Call("toolu_1", "get_weather", map[string]any{"city": "Paris"}),
				pt.Call("toolu_2", "get_weather", map[string]any{"city": "Oslo"})),
			pt.UserContent(pt.FuncResponse("toolu_1", "get_weather", map[string]any{"temp": 20})),
			pt.UserContent(pt.Text("and?"), pt.FuncResponse("toolu_2", "get_weather", map[string]any{"temp": 5})),
		},
		Tools: []*model.FunctionDeclaration{
			{Name: "get_weather", Description: "Weather.", Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}, "additionalProperties": false}},
			{Name: "now"},
		},
		Config: &model.GenerateConfig{Temperature: &temp, TopK: &topK, MaxOutputTokens: 99, StopSequences: []string{"END"}},
	}
	fake := newFake(t, pt.JSON(textReply))
	pt.Collect(t, newModel(t, fake, "claude-test").Generate(t.Context(), req, false))
	body := fake.Seen()[0].Body
	pt.JSONEqual(t, "system", body["system"], `[{"type":"text","text":"Be brief."}]`)
	pt.JSONEqual(t, "messages", body["messages"], `[
		{"role":"user","content":[{"type":"text","text":"weather?"}]},
		{"role":"assistant","content":[
			{"type":"thinking","thinking":"two","signature":"sig"},
			{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},
			{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Oslo"}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"{\"temp\":20}"}],"is_error":false},
			{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"{\"temp\":5}"}],"is_error":false},
			{"type":"text","text":"and?"}]}]`)
	pt.JSONEqual(t, "tools", body["tools"], `[
		{"name":"get_weather","description":"Weather.","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}},
		{"name":"now","input_schema":{"type":"object","properties":{}}}]`)
	pt.JSONEqual(t, "max_tokens", body["max_tokens"], `99`)
	pt.JSONEqual(t, "temperature", body["temperature"], `0.2`)
	pt.JSONEqual(t, "top_k", body["top_k"], `5`)
	pt.JSONEqual(t, "stop_sequences", body["stop_sequences"], `["END"]`)
	pt.JSONEqual(t, "model", body["model"], `"claude-test"`)
}

// TestToolRoundTrip: the tool_use id the model chose comes back with the
// result in the next request.
func TestToolRoundTrip(t *testing.T) {
	fake := newFake(t,
		pt.JSON(`{"id":"m1","type":"message","role":"assistant","model":"c","content":[{"type":"tool_use","id":"toolu_Q7","name":"add","input":{"a":2,"b":3}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":5}}`),
		pt.JSON(`{"id":"m2","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"5"}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":1}}`),
	)
	m := newModel(t, fake, "claude-test")
	req := &model.Request{Contents: []*agentrunnerv1.Content{pt.UserContent(pt.Text("2+3?"))}, Tools: []*model.FunctionDeclaration{{Name: "add"}}}
	first := pt.Collect(t, m.Generate(t.Context(), req, false))
	fc := first[0].Content.GetParts()[0].GetFunctionCall()
	if fc.GetId() != "toolu_Q7" || fc.GetName() != "add" {
		t.Fatalf("first answer %s, want the call to add", pt.ShowResponse(first[0]))
	}
	args := fc.GetArgs().AsMap()
	req.Contents = append(req.Contents, first[0].Content, pt.UserContent(pt.FuncResponse(fc.GetId(), "add", map[string]any{"sum": args["a"].(float64) + args["b"].(float64)})))
	second := pt.Collect(t, m.Generate(t.Context(), req, false))
	if len(second) != 1 || pt.TextOf(second[0]) != "5" {
		t.Fatalf("second answer %v", second)
	}
	pt.JSONEqual(t, "second request", fake.Seen()[1].Body["messages"], `[
		{"role":"user","content":[{"type":"text","text":"2+3?"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_Q7","name":"add","input":{"a":2,"b":3}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_Q7","content":[{"type":"text","text":"{\"sum\":5}"}],"is_error":false}]}]`)
}
