package main

import (
	"strings"
	"testing"

	"google.golang.org/adk/model"
	"google.golang.org/genai"
)

// TestEchoModel: the answer is agentrunner's offline echo, streamed word
// by word then whole, with usage counted as the offline model counts it.
func TestEchoModel(t *testing.T) {
	req := &model.LLMRequest{
		Config:   &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText("abcd", genai.RoleUser)},
		Contents: []*genai.Content{genai.NewContentFromText("w0 w1 w2", genai.RoleUser)},
	}
	const want = "offline model: you said: w0 w1 w2"
	for _, stream := range []bool{false, true} {
		var partial strings.Builder
		var final []*model.LLMResponse
		for resp, err := range (echoModel{name: "offline"}).GenerateContent(t.Context(), req, stream) {
			if err != nil {
				t.Fatal(err)
			}
			if resp.Partial {
				partial.WriteString(resp.Content.Parts[0].Text)
				continue
			}
			final = append(final, resp)
		}
		if len(final) != 1 || final[0].Content.Parts[0].Text != want || !final[0].TurnComplete {
			t.Fatalf("stream %v: final responses %+v, want one with %q", stream, final, want)
		}
		if stream && partial.String() != want {
			t.Errorf("partials join to %q, want %q", partial.String(), want)
		}
		if !stream && partial.Len() > 0 {
			t.Errorf("unstreamed call yielded partials %q", partial.String())
		}
		// (4 + 8 bytes + 3) / 4 = 3 prompt tokens; 7 words.
		if u := final[0].UsageMetadata; u.PromptTokenCount != 3 || u.CandidatesTokenCount != 7 || u.TotalTokenCount != 10 {
			t.Errorf("usage %+v, want 3 + 7 = 10", u)
		}
	}
}
