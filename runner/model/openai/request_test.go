package openai

import (
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

const textReply = `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`

// TestRequest checks what the SDK sends for a conversation with a system
// instruction, a model turn with parallel calls, their responses, images,
// tools and generation settings.
func TestRequest(t *testing.T) {
	temp := float32(0.5)
	req := &model.Request{
		SystemInstruction: "Be brief.",
		Contents: []*agentrunnerv1.Content{
			pt.UserContent(pt.Text("weather?"), &agentrunnerv1.Part{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "image/png", Data: []byte{1, 2, 3}}}}),
			pt.ModelContent(&agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "hmm"}, Thought: true}, pt.Text("Let me check."),
				pt.Call("call_1", "get_weather", map[string]any{"city": "Paris"}),
				pt.Call("call_2", "get_weather", map[string]any{"city": "Oslo"})),
			pt.UserContent(pt.FuncResponse("call_1", "get_weather", map[string]any{"temp": 20}),
				pt.FuncResponse("call_2", "get_weather", map[string]any{"temp": 5}), pt.Text("thanks")),
		},
		Tools: []*model.FunctionDeclaration{
			{Name: "get_weather", Description: "Weather of a city.", Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}},
			{Name: "now"},
		},
		Config: &model.GenerateConfig{Temperature: &temp, MaxOutputTokens: 64, StopSequences: []string{"END"}},
	}
	fake := newFake(t, pt.JSON(textReply))
	pt.Collect(t, newModel(t, fake, "gpt-test").Generate(t.Context(), req, false))
	body := fake.Seen()[0].Body
	pt.JSONEqual(t, "messages", body["messages"], `[
		{"role":"system","content":"Be brief."},
		{"role":"user","content":[{"type":"text","text":"weather?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AQID"}}]},
		{"role":"assistant","content":"Let me check.","tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
			{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"{\"temp\":20}"},
		{"role":"tool","tool_call_id":"call_2","content":"{\"temp\":5}"},
		{"role":"user","content":[{"type":"text","text":"thanks"}]}]`)
	pt.JSONEqual(t, "tools", body["tools"], `[
		{"type":"function","function":{"name":"get_weather","description":"Weather of a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},
		{"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{}}}}]`)
	pt.JSONEqual(t, "model", body["model"], `"gpt-test"`)
	pt.JSONEqual(t, "temperature", body["temperature"], `0.5`)
	pt.JSONEqual(t, "max_completion_tokens", body["max_completion_tokens"], `64`)
	pt.JSONEqual(t, "stop", body["stop"], `["END"]`)
	if _, ok := body["stream_options"]; ok {
		t.Errorf("a unary call sent stream_options")
	}
}

func TestRequestStreamAndOverrides(t *testing.T) {
	fake := newFake(t, sse.Answer(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`))
	m, err := New(Config{Model: "gpt-test", BaseURL: fake.URL + "/v1/", LegacyMaxTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	req := pt.HelloRequest()
	req.Model = "gpt-other"
	req.Config = &model.GenerateConfig{MaxOutputTokens: 10}
	pt.Collect(t, m.Generate(t.Context(), req, true))
	r := fake.Seen()[0]
	pt.JSONEqual(t, "model", r.Body["model"], `"gpt-other"`)
	pt.JSONEqual(t, "stream_options", r.Body["stream_options"], `{"include_usage":true}`)
	pt.JSONEqual(t, "max_tokens", r.Body["max_tokens"], `10`)
	if auth := r.Header.Get("Authorization"); auth != "" {
		t.Errorf("Authorization %q without an API key, want none (and never the environment's)", auth)
	}
}

// TestToolRoundTrip runs a call, the tool's answer and the final answer
// through the SDK: the call id the model chose comes back with the result.
func TestToolRoundTrip(t *testing.T) {
	fake := newFake(t,
		pt.JSON(`{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_Zx9","type":"function","function":{"name":"add","arguments":"{\"a\":2,\"b\":3}"}}]},"finish_reason":"tool_calls"}]}`),
		pt.JSON(`{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"2 + 3 = 5"},"finish_reason":"stop"}]}`),
	)
	m := newModel(t, fake, "gpt-test")
	req := &model.Request{
		Contents: []*agentrunnerv1.Content{pt.UserContent(pt.Text("2+3?"))},
		Tools:    []*model.FunctionDeclaration{{Name: "add", Parameters: map[string]any{"type": "object"}}},
	}
	first := pt.Collect(t, m.Generate(t.Context(), req, false))
	fc := first[0].Content.GetParts()[0].GetFunctionCall()
	if fc.GetId() != "call_Zx9" || fc.GetName() != "add" || fc.GetArgs().AsMap()["a"] != float64(2) {
		t.Fatalf("first answer %s, want the call to add", pt.ShowResponse(first[0]))
	}
	sum := fc.GetArgs().AsMap()["a"].(float64) + fc.GetArgs().AsMap()["b"].(float64)
	req.Contents = append(req.Contents, first[0].Content, pt.UserContent(pt.FuncResponse(fc.GetId(), fc.GetName(), map[string]any{"sum": sum})))
	second := pt.Collect(t, m.Generate(t.Context(), req, false))
	if d := pt.DiffResponses(second, []*model.Response{{Content: pt.ModelContent(pt.Text("2 + 3 = 5")), TurnComplete: true, FinishReason: "STOP", ModelVersion: "m"}}); d != "" {
		t.Error(d)
	}
	pt.JSONEqual(t, "second request", fake.Seen()[1].Body["messages"], `[
		{"role":"user","content":[{"type":"text","text":"2+3?"}]},
		{"role":"assistant","tool_calls":[{"id":"call_Zx9","type":"function","function":{"name":"add","arguments":"{\"a\":2,\"b\":3}"}}]},
		{"role":"tool","tool_call_id":"call_Zx9","content":"{\"sum\":5}"}]`)
}
