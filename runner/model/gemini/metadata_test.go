package gemini

import (
	"testing"
	"time"

	"cloud.google.com/go/civil"
	"google.golang.org/genai"
	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// TestAccumulatedMetadata: a stream's citations are kept once each even
// when chunks repeat them, with as much of the publication date as the
// source gave; the last grounding metadata is kept whole as JSON; usage
// details and the traffic type are converted.
func TestAccumulatedMetadata(t *testing.T) {
	vertex := &genai.Citation{StartIndex: 2, EndIndex: 9, URI: "https://example.com/p", Title: "Paper", License: "MIT",
		PublicationDate: civil.Date{Year: 2024, Month: time.March}}
	chunk := func(text string, cs ...*genai.Citation) *genai.GenerateContentResponse {
		return &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{
			Content:          genai.NewContentFromText(text, genai.RoleModel),
			CitationMetadata: &genai.CitationMetadata{Citations: cs},
		}}}
	}
	a := &accumulator{mergeText: true}
	last := chunk("world", vertex, &genai.Citation{URI: "https://example.com/q", PublicationDate: civil.Date{Year: 1999}})
	last.Candidates[0].FinishReason = genai.FinishReasonStop
	last.Candidates[0].GroundingMetadata = &genai.GroundingMetadata{WebSearchQueries: []string{"q"}}
	last.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{
		PromptTokenCount: 5, TotalTokenCount: 5, TrafficType: genai.TrafficTypeProvisionedThroughput,
		CacheTokensDetails: []*genai.ModalityTokenCount{{Modality: genai.MediaModalityImage, TokenCount: 4}},
	}
	for _, r := range []*genai.GenerateContentResponse{chunk("hello ", vertex), last} {
		if _, err := a.add(r); err != nil {
			t.Fatal(err)
		}
	}
	resp := a.response()
	want := []*agentrunnerv1.Citation{
		{StartIndex: 2, EndIndex: 9, Uri: "https://example.com/p", Title: "Paper", License: "MIT", PublicationDate: "2024-03"},
		{Uri: "https://example.com/q", PublicationDate: "1999"},
	}
	got := resp.Citations.GetCitations()
	if len(got) != len(want) {
		t.Fatalf("citations %v, want %v", got, want)
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("citation %d = %v, want %v", i, got[i], want[i])
		}
	}
	if q := resp.Grounding.GetFields()["webSearchQueries"].GetListValue().GetValues(); len(q) != 1 || q[0].GetStringValue() != "q" {
		t.Errorf("grounding %v", resp.Grounding)
	}
	u := resp.Usage
	if u.GetTrafficType() != "PROVISIONED_THROUGHPUT" || len(u.GetCacheTokensDetails()) != 1 ||
		u.GetCacheTokensDetails()[0].GetModality() != "IMAGE" || u.GetCacheTokensDetails()[0].GetTokenCount() != 4 {
		t.Errorf("usage %v", u)
	}
	if formatDate(civil.Date{Year: 2024, Month: time.March, Day: 7}) != "2024-03-07" || formatDate(civil.Date{}) != "" {
		t.Error("formatDate")
	}
}
