package storetest

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// fullEvent is an event with every field of Event, EventActions,
// UsageMetadata and Cost set, and a citation with every field set. The store
// assigns the sequence, so the caller sets it to what it expects.
func fullEvent(t *testing.T) *agentrunnerv1.Event {
	t.Helper()
	ev := &agentrunnerv1.Event{
		Id:           "ev-full",
		InvocationId: "run-full",
		Author:       "researcher",
		Branch:       "root.researcher",
		Timestamp:    timestamppb.New(time.Date(2026, 11, 25, 9, 30, 0, 123456789, time.UTC)),
		Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{
			{Data: &agentrunnerv1.Part_Text{Text: "thinking"}, Thought: true, ThoughtSignature: []byte{1, 2}},
			{Data: &agentrunnerv1.Part_Text{Text: "The answer, with sources."}},
		}},
		Partial:            false,
		TurnComplete:       true,
		ErrorCode:          "MAX_TOKENS",
		ErrorMessage:       "the response reached the maximum number of output tokens",
		LongRunningToolIds: []string{"call-1"},
		FinishReason:       "MAX_TOKENS",
		ModelVersion:       "fake-model-002",
		CitationMetadata: &agentrunnerv1.CitationMetadata{Citations: []*agentrunnerv1.Citation{{
			StartIndex: 4, EndIndex: 10, Uri: "https://example.com/a", Title: "A", License: "CC-BY-4.0", PublicationDate: "2024-05",
		}}},
		GroundingMetadata: mustStruct(t, map[string]any{
			"webSearchQueries": []any{"answer"},
			"groundingChunks":  []any{map[string]any{"web": map[string]any{"uri": "https://example.com/a", "title": "A"}}},
		}),
		CustomMetadata: mustStruct(t, map[string]any{"trace": "abc", "score": 0.5}),
		Interrupted:    true,
		Actions: &agentrunnerv1.EventActions{
			StateDelta:               mustStruct(t, map[string]any{"k": "v", "user:u": 1.0}),
			ArtifactDelta:            map[string]int64{"report.txt": 2},
			TransferToAgent:          "writer",
			Escalate:                 true,
			SkipSummarization:        true,
			RewindBeforeInvocationId: "e-rewound",
			Compaction: &agentrunnerv1.EventCompaction{StartSequence: 1, EndSequence: 2, Summary: &agentrunnerv1.Content{
				Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "summary"}}},
			}},
		},
		UsageMetadata: &agentrunnerv1.UsageMetadata{
			PromptTokenCount: 100, CandidatesTokenCount: 20, ThoughtsTokenCount: 5, CachedContentTokenCount: 40,
			ToolUsePromptTokenCount: 3, TotalTokenCount: 128,
			PromptTokensDetails:        []*agentrunnerv1.ModalityTokenCount{{Modality: "TEXT", TokenCount: 90}, {Modality: "IMAGE", TokenCount: 10}},
			CacheTokensDetails:         []*agentrunnerv1.ModalityTokenCount{{Modality: "TEXT", TokenCount: 40}},
			CandidatesTokensDetails:    []*agentrunnerv1.ModalityTokenCount{{Modality: "TEXT", TokenCount: 20}},
			ToolUsePromptTokensDetails: []*agentrunnerv1.ModalityTokenCount{{Modality: "TEXT", TokenCount: 3}},
			CacheCreationTokenCount:    7,
			TrafficType:                "ON_DEMAND",
			Estimated:                  true,
		},
		Cost: &agentrunnerv1.Cost{Currency: "USD", Micros: 1_234_567, UnpricedCalls: 1, Model: "fast"},
		// Sub-millisecond times and durations, which a store must keep
		// to the nanosecond as the timestamp above.
		Timing: &agentrunnerv1.Timing{
			StartTime:        timestamppb.New(time.Date(2026, 11, 25, 9, 29, 58, 987654321, time.UTC)),
			TimeToFirstChunk: durationpb.New(250*time.Millisecond + 1234*time.Nanosecond),
			Duration:         durationpb.New(1135*time.Millisecond + 802*time.Nanosecond),
			Attempts: []*agentrunnerv1.ModelAttempt{{
				Model: "fake-model", StartTime: timestamppb.New(time.Date(2026, 11, 25, 9, 29, 58, 987654321, time.UTC)),
				TimeToFirstChunk: durationpb.New(3 * time.Microsecond), Duration: durationpb.New(7 * time.Microsecond), ErrorCode: "UNAVAILABLE",
			}},
		},
	}
	// Sequence is the store's to assign; partial events are refused.
	requireAllSet(t, ev, "sequence", "partial")
	requireAllSet(t, ev.GetActions())
	requireAllSet(t, ev.GetUsageMetadata())
	requireAllSet(t, ev.GetCost())
	requireAllSet(t, ev.GetTiming())
	requireAllSet(t, ev.GetTiming().GetAttempts()[0])
	requireAllSet(t, ev.GetCitationMetadata().GetCitations()[0])
	return ev
}

// requireAllSet fails when m has a field, other than those skipped, that
// is not set: a field added to the schema must be added to fullEvent, so
// that every store is shown to keep it.
func requireAllSet(t *testing.T, m proto.Message, skip ...protoreflect.Name) {
	t.Helper()
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !r.Has(fd) && !contains(skip, fd.Name()) {
			t.Fatalf("storetest: fullEvent leaves %s unset; set it so that the stores are shown to keep it", fd.FullName())
		}
	}
}

func contains(names []protoreflect.Name, n protoreflect.Name) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

// testEventAllFields: an event with every field set reads back equal from
// GetSession and ListEvents: whatever the model returned and the runner
// recorded is kept, nothing is dropped on the way to disk.
func testEventAllFields(t *testing.T, s store.Store) {
	k := key("app", "u", "fields")
	create(t, s, k, nil)
	appendEv(t, s, k, textEvent("user", "one", nil))
	appendEv(t, s, k, textEvent("agent", "two", nil))
	ev := fullEvent(t)
	got := appendEv(t, s, k, ev)
	want := proto.CloneOf(ev)
	want.Sequence = 3
	if !proto.Equal(got, want) {
		t.Fatalf("AppendEvent returned\n%v\nwant\n%v", got, want)
	}
	_, evs := get(t, s, k, store.GetOptions{})
	if len(evs) != 3 || !proto.Equal(evs[2], want) {
		t.Fatalf("GetSession's event 3 =\n%v\nwant\n%v", evs[len(evs)-1], want)
	}
	listed, _, err := s.ListEvents(t.Context(), k, store.EventFilter{AfterSequence: 2}, store.Page{Size: 10})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	if len(listed) != 1 || !proto.Equal(listed[0], want) {
		t.Fatalf("ListEvents = %v, want the full event", listed)
	}
}
