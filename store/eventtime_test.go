package store

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// TestEventTime: the timestamp read from the encoding is the one
// proto.Unmarshal gives, with the fields around it skipped.
func TestEventTime(t *testing.T) {
	events := []*agentrunnerv1.Event{
		{},
		{Id: "e", Author: "model", Sequence: 9},
		{Id: "e", Timestamp: timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)), Sequence: 7,
			Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "hi"}}}}},
		{Timestamp: timestamppb.New(time.Date(1960, 1, 1, 0, 0, 0, 999, time.UTC))},
	}
	for _, ev := range events {
		b, err := proto.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := EventTime(b)
		if want := ev.GetTimestamp().AsTime(); err != nil || !got.Equal(want) {
			t.Errorf("EventTime(%v) = %v, %v; want %v", ev, got, err, want)
		}
	}
	if _, err := EventTime([]byte{0x2a, 0x05, 0x08}); err == nil {
		t.Error("EventTime of a truncated timestamp: no error")
	}
	ten := time.Unix(10, 0)
	f := EventFilter{AfterTime: &ten}
	if keep, err := f.KeepsEncoded([]byte{0xff}); err == nil || keep {
		t.Errorf("KeepsEncoded(garbage) = %v, %v; want an error", keep, err)
	}
	if keep, err := (EventFilter{}).KeepsEncoded([]byte{0xff}); err != nil || !keep {
		t.Errorf("KeepsEncoded with no time = %v, %v; want kept unread", keep, err)
	}
}
