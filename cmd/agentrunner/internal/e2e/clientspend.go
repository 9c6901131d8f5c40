package e2e

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// clientCall is an event a client appends claiming a model call: usage,
// cost, a model name and a timestamp of its choosing.
func clientCall(tokens int32, micros int64, model string, at time.Time) *agentrunnerv1.Event {
	return &agentrunnerv1.Event{
		Author:        "answer",
		Content:       &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "trust me"}}}},
		Timestamp:     timestamppb.New(at),
		ModelVersion:  model,
		UsageMetadata: &agentrunnerv1.UsageMetadata{PromptTokenCount: tokens, TotalTokenCount: tokens},
		Cost:          &agentrunnerv1.Cost{Currency: "USD", Micros: micros, Model: model},
	}
}

// clientCannotRewriteSpend (issue 46, "a client can rewrite the
// money"): a session its budget refused stays refused after its client
// appends an event of negative usage and cost; a user's events claiming
// 2·10⁹ tokens dated tomorrow, under models of their own naming, add
// nothing to any day's usage, the user's or the app's, and the events
// are stored as given.
func clientCannotRewriteSpend(t *testing.T, tg Target) {
	srv := costsServe(t, tg, 1000)
	rc, sc := srv.Runner(), srv.Sessions()
	ctx := t.Context()
	CreateSession(t, sc, "sessioned", "u1", "a")
	RunToEnd(t, rc, &servicev1.RunRequest{AppName: "sessioned", UserId: "u1", SessionId: "a", NewMessage: UserText("hello")})
	refund := clientCall(-1_000_000, -1_000_000, "priced", time.Now())
	if _, err := sc.AppendEvent(ctx, &servicev1.AppendEventRequest{AppName: "sessioned", UserId: "u1", SessionId: "a", Event: refund}); err != nil {
		t.Fatal(err)
	}
	err := RunOnce(t, rc, &servicev1.RunRequest{AppName: "sessioned", UserId: "u1", SessionId: "a", NewMessage: UserText("hello again")})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("run after a client's negative usage: %v, want RESOURCE_EXHAUSTED: the budget was reached", err)
	}

	uc := srv.Usage()
	today := time.Now().UTC()
	tomorrow := today.AddDate(0, 0, 1)
	CreateSession(t, sc, "capped", "mallory", "m")
	for i := range 3 {
		ev := clientCall(2_000_000_000, 0, fmt.Sprintf("made-up-%d", i), tomorrow)
		got, err := sc.AppendEvent(ctx, &servicev1.AppendEventRequest{AppName: "capped", UserId: "mallory", SessionId: "m", Event: ev})
		if err != nil {
			t.Fatal(err)
		}
		if got.GetEvent().GetUsageMetadata().GetTotalTokenCount() != 2_000_000_000 || !got.GetEvent().GetTimestamp().AsTime().Equal(tomorrow) {
			t.Fatalf("stored %v, want the event as given", got.GetEvent())
		}
	}
	for _, user := range []string{"mallory", ""} {
		resp, err := uc.GetUsage(ctx, &servicev1.GetUsageRequest{AppName: "capped", UserId: user,
			StartDate: today.AddDate(0, 0, -1).Format(time.DateOnly), EndDate: tomorrow.AddDate(0, 0, 1).Format(time.DateOnly)})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetDays()) != 0 || resp.GetTotal().GetTotalTokens() != 0 {
			t.Fatalf("usage of %q after a client's claims: %v, want none", user, resp)
		}
	}
	got, err := sc.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "capped", UserId: "mallory", SessionId: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if u := got.GetSession().GetUsage(); u.GetTotalTokenCount() != 0 || got.GetSession().GetCost().GetMicros() != 0 {
		t.Fatalf("session totals %v %v after a client's claims, want none", u, got.GetSession().GetCost())
	}
	CreateSession(t, sc, "capped", "u2", "s")
	RunToEnd(t, rc, &servicev1.RunRequest{AppName: "capped", UserId: "u2", SessionId: "s", NewMessage: UserText("hello")})
}
