package turn

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// timeAnswers sets, on each function response of content (the user's
// message, a copy), how long the caller took to execute the tool: from the
// event of its call to now, when the runner received the answer. What a
// caller set is replaced: timing is the runner's, read from its clock, and
// a response whose call is not among events gets none.
func timeAnswers(content *agentrunnerv1.Content, events []*agentrunnerv1.Event, now time.Time) {
	for _, p := range content.GetParts() {
		fr := p.GetFunctionResponse()
		if fr == nil {
			continue
		}
		fr.Timing = nil
		if at := callTime(events, fr.GetId()); !at.IsZero() {
			fr.Timing = &agentrunnerv1.Timing{StartTime: timestamppb.New(at), Duration: durationpb.New(now.Sub(at))}
		}
	}
}

// callTime is the time of the event that holds the function call id,
// searched from the newest (a call answered is most often recent); zero
// when none does.
func callTime(events []*agentrunnerv1.Event, id string) time.Time {
	if id == "" {
		return time.Time{}
	}
	for i := len(events) - 1; i >= 0; i-- {
		for _, p := range events[i].GetContent().GetParts() {
			if p.GetFunctionCall().GetId() == id && events[i].GetTimestamp() != nil {
				return events[i].GetTimestamp().AsTime()
			}
		}
	}
	return time.Time{}
}
