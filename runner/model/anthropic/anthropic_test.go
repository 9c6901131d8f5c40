package anthropic

import (
	"encoding/json"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

var generateCases = []struct {
	name   string
	stream bool
	reply  reply
	want   []*model.Response
}{
	{
		name:  "text",
		reply: unary(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-fake-1","content":[{"type":"text","text":"Hello!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":3,"cache_read_input_tokens":5,"cache_creation_input_tokens":2}}`),
		want: []*model.Response{{
			Content: modelContent(text("Hello!")), TurnComplete: true, FinishReason: "STOP", ModelVersion: "claude-fake-1",
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 17, CandidatesTokenCount: 3, CachedContentTokenCount: 5, TotalTokenCount: 20, CacheCreationTokenCount: 2},
		}},
	},
	{
		// A cited text block supports its own span of the answer; web
		// pages are cited by URL, documents by title; the tier is kept.
		name:  "citations and tier",
		reply: unary(`{"id":"msg_c","type":"message","role":"assistant","model":"claude-fake-1","content":[{"type":"text","text":"Intro. "},{"type":"text","text":"Oslo is cold.","citations":[{"type":"web_search_result_location","url":"https://example.com/oslo","title":"Oslo","cited_text":"cold","encrypted_index":"x"},{"type":"char_location","document_title":"Almanac","document_index":0,"start_char_index":1,"end_char_index":5,"cited_text":"cold"}]}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":3,"service_tier":"priority"}}`),
		want: []*model.Response{{
			Content: modelContent(text("Intro. "), text("Oslo is cold.")), TurnComplete: true, FinishReason: "STOP", ModelVersion: "claude-fake-1",
			Citations: &agentrunnerv1.CitationMetadata{Citations: []*agentrunnerv1.Citation{
				{StartIndex: 7, EndIndex: 20, Uri: "https://example.com/oslo", Title: "Oslo"},
				{StartIndex: 7, EndIndex: 20, Title: "Almanac"},
			}},
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 3, TotalTokenCount: 13, TrafficType: "PRIORITY"},
		}},
	},
	{
		name:  "parallel tool use with thinking",
		reply: unary(`{"id":"msg_2","type":"message","role":"assistant","model":"claude-fake-1","content":[{"type":"thinking","thinking":"two cities","signature":"sig-A"},{"type":"text","text":"Checking both."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Oslo"}}],"stop_reason":"tool_use","usage":{"input_tokens":30,"output_tokens":20}}`),
		want: []*model.Response{{
			Content: modelContent(&agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "two cities"}, Thought: true, ThoughtSignature: []byte("sig-A")},
				text("Checking both."),
				call("toolu_1", "get_weather", map[string]any{"city": "Paris"}),
				call("toolu_2", "get_weather", map[string]any{"city": "Oslo"})),
			TurnComplete: true, FinishReason: "STOP", ModelVersion: "claude-fake-1",
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 30, CandidatesTokenCount: 20, TotalTokenCount: 50},
		}},
	},
	{
		name:   "stream text",
		stream: true,
		reply:  sse(evStart, evTextStart, evPing, evTextHel, evTextLo, evStop0, evDeltaEnd, evMsgStop),
		want: []*model.Response{
			partial("claude-fake-1", "Hel"),
			partial("claude-fake-1", "lo"),
			{Content: modelContent(text("Hello")), TurnComplete: true, FinishReason: "STOP", ModelVersion: "claude-fake-1",
				Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 16, CandidatesTokenCount: 7, CachedContentTokenCount: 4, TotalTokenCount: 23}},
		},
	},
	{
		name:   "stream parallel tool use",
		stream: true,
		reply: sse(evStart,
			`content_block_start: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}}`,
			`content_block_delta: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`,
			`content_block_delta: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"Oslo\"}"}}`,
			`content_block_stop: {"type":"content_block_stop","index":0}`,
			`content_block_start: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_b","name":"get_time","input":{}}}`,
			`content_block_delta: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"tz\":\"CET\"}"}}`,
			`content_block_stop: {"type":"content_block_stop","index":1}`,
			`message_delta: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}`,
			evMsgStop),
		want: []*model.Response{{
			Content:      modelContent(call("toolu_a", "get_weather", map[string]any{"city": "Oslo"}), call("toolu_b", "get_time", map[string]any{"tz": "CET"})),
			TurnComplete: true, FinishReason: "STOP", ModelVersion: "claude-fake-1",
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 16, CandidatesTokenCount: 30, CachedContentTokenCount: 4, TotalTokenCount: 46},
		}},
	},
	{
		name:  "max tokens keeps the truncated answer",
		reply: unary(`{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"The answer is"}],"stop_reason":"max_tokens","usage":{"input_tokens":1,"output_tokens":4}}`),
		want: []*model.Response{{Content: modelContent(text("The answer is")), TurnComplete: true, FinishReason: "MAX_TOKENS", ModelVersion: "c",
			ErrorCode: "MAX_TOKENS", ErrorMessage: "maximum number of output tokens",
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 1, CandidatesTokenCount: 4, TotalTokenCount: 5}}},
	},
	{
		name:  "refusal",
		reply: unary(`{"id":"m","type":"message","role":"assistant","model":"c","content":[],"stop_reason":"refusal","usage":{"input_tokens":1,"output_tokens":0}}`),
		want: []*model.Response{{Content: modelContent(), TurnComplete: true, FinishReason: "SAFETY", ModelVersion: "c",
			ErrorCode: "SAFETY", ErrorMessage: "refused", Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 1, TotalTokenCount: 1}}},
	},
}

func TestGenerate(t *testing.T) {
	for _, tt := range generateCases {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t, tt.reply)
			got := collect(t, fake.model(t, "claude-test").Generate(t.Context(), helloRequest(), tt.stream))
			if d := diffResponses(got, tt.want); d != "" {
				t.Error(d)
			}
			reqs := fake.seen()
			if len(reqs) != 1 || reqs[0].Path != "/v1/messages" || reqs[0].APIKey != "fake-key" || reqs[0].Version == "" {
				t.Fatalf("requests %+v, want one POST /v1/messages with the Config's key and a version", reqs)
			}
			if (reqs[0].Body["stream"] == true) != tt.stream {
				t.Errorf("body stream = %v, want %v", reqs[0].Body["stream"], tt.stream)
			}
		})
	}
}

func jsonEqual(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want for %s: %v", what, err)
	}
	g, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	if string(g) != string(wb) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, wb)
	}
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
			userContent(text("weather?")),
			modelContent(&agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "two"}, Thought: true, ThoughtSignature: []byte("sig")},
				&agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "unsigned"}, Thought: true},
				call("toolu_1", "get_weather", map[string]any{"city": "Paris"}),
				call("toolu_2", "get_weather", map[string]any{"city": "Oslo"})),
			userContent(funcResponse("toolu_1", "get_weather", map[string]any{"temp": 20})),
			userContent(text("and?"), funcResponse("toolu_2", "get_weather", map[string]any{"temp": 5})),
		},
		Tools: []*model.FunctionDeclaration{
			{Name: "get_weather", Description: "Weather.", Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}, "additionalProperties": false}},
			{Name: "now"},
		},
		Config: &model.GenerateConfig{Temperature: &temp, TopK: &topK, MaxOutputTokens: 99, StopSequences: []string{"END"}},
	}
	fake := newFake(t, unary(textReply))
	collect(t, fake.model(t, "claude-test").Generate(t.Context(), req, false))
	body := fake.seen()[0].Body
	jsonEqual(t, "system", body["system"], `[{"type":"text","text":"Be brief."}]`)
	jsonEqual(t, "messages", body["messages"], `[
		{"role":"user","content":[{"type":"text","text":"weather?"}]},
		{"role":"assistant","content":[
			{"type":"thinking","thinking":"two","signature":"sig"},
			{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},
			{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Oslo"}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"{\"temp\":20}"}],"is_error":false},
			{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"{\"temp\":5}"}],"is_error":false},
			{"type":"text","text":"and?"}]}]`)
	jsonEqual(t, "tools", body["tools"], `[
		{"name":"get_weather","description":"Weather.","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}},
		{"name":"now","input_schema":{"type":"object","properties":{}}}]`)
	jsonEqual(t, "max_tokens", body["max_tokens"], `99`)
	jsonEqual(t, "temperature", body["temperature"], `0.2`)
	jsonEqual(t, "top_k", body["top_k"], `5`)
	jsonEqual(t, "stop_sequences", body["stop_sequences"], `["END"]`)
	jsonEqual(t, "model", body["model"], `"claude-test"`)
}

// TestToolRoundTrip: the tool_use id the model chose comes back with the
// result in the next request.
func TestToolRoundTrip(t *testing.T) {
	fake := newFake(t,
		unary(`{"id":"m1","type":"message","role":"assistant","model":"c","content":[{"type":"tool_use","id":"toolu_Q7","name":"add","input":{"a":2,"b":3}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":5}}`),
		unary(`{"id":"m2","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"5"}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":1}}`),
	)
	m := fake.model(t, "claude-test")
	req := &model.Request{Contents: []*agentrunnerv1.Content{userContent(text("2+3?"))}, Tools: []*model.FunctionDeclaration{{Name: "add"}}}
	first := collect(t, m.Generate(t.Context(), req, false))
	fc := first[0].Content.GetParts()[0].GetFunctionCall()
	if fc.GetId() != "toolu_Q7" || fc.GetName() != "add" {
		t.Fatalf("first answer %s, want the call to add", showResponse(first[0]))
	}
	args := fc.GetArgs().AsMap()
	req.Contents = append(req.Contents, first[0].Content, userContent(funcResponse(fc.GetId(), "add", map[string]any{"sum": args["a"].(float64) + args["b"].(float64)})))
	second := collect(t, m.Generate(t.Context(), req, false))
	if len(second) != 1 || textOf(second[0]) != "5" {
		t.Fatalf("second answer %v", second)
	}
	jsonEqual(t, "second request", fake.seen()[1].Body["messages"], `[
		{"role":"user","content":[{"type":"text","text":"2+3?"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_Q7","name":"add","input":{"a":2,"b":3}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_Q7","content":[{"type":"text","text":"{\"sum\":5}"}],"is_error":false}]}]`)
}

func textOf(r *model.Response) string {
	s := ""
	for _, p := range r.Content.GetParts() {
		s += p.GetText()
	}
	return s
}
