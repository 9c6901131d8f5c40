package main

import (
	"context"
	"strings"
	"testing"
	"time"

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

// TestPacedModel: with a pace, a streamed answer comes in pace.chunks
// partials that join to the final text, the first no sooner than
// pace.first and the whole answer no sooner than the sum of the delays
// (lower bounds only: a loaded machine may be slower).
func TestPacedModel(t *testing.T) {
	req := &model.LLMRequest{Contents: []*genai.Content{genai.NewContentFromText("w0 w1 w2", genai.RoleUser)}}
	m := echoModel{name: "offline", pace: pace{first: 30 * time.Millisecond, gap: 10 * time.Millisecond, chunks: 4}}
	start := time.Now()
	var partials []string
	var first, whole time.Duration
	for resp, err := range m.GenerateContent(t.Context(), req, true) {
		if err != nil {
			t.Fatal(err)
		}
		if resp.Partial {
			if len(partials) == 0 {
				first = time.Since(start)
			}
			partials = append(partials, resp.Content.Parts[0].Text)
			continue
		}
		whole = time.Since(start)
		if got := strings.Join(partials, ""); got != resp.Content.Parts[0].Text {
			t.Errorf("partials join to %q, final %q", got, resp.Content.Parts[0].Text)
		}
	}
	if len(partials) != 4 {
		t.Fatalf("%d partials %q, want 4", len(partials), partials)
	}
	if first < 30*time.Millisecond || whole < 70*time.Millisecond {
		t.Errorf("first after %v, whole after %v; want at least 30ms and 70ms", first, whole)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, err := range m.GenerateContent(ctx, req, true) {
		if err == nil {
			t.Fatal("cancelled call answered")
		}
	}
}
