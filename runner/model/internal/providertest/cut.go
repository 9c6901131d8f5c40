package providertest

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/retry"
)

// CutCase is a streamed call cut off mid-answer and the usage that must
// count it.
type CutCase struct {
	Name string
	// Reply streams the start of an answer, then fails (DropAfter, an
	// error event) or hangs (Hang): then the caller cancels once the first
	// partial arrived.
	Reply  Reply
	Cancel bool
	// WantPrompt is the prompt count the provider reported before the
	// cut; 0 when it reported nothing, and the prompt is estimated.
	WantPrompt int32
	// WantEstimated: some count is the runner's estimate.
	WantEstimated bool
}

// cutPrice prices the cut calls: a cut call is priced like any.
var cutPrice = &model.Price{Currency: "USD", Input: 1_000_000, Output: 4_000_000}

// RunCutCalls runs each cut through the retry wrapper over the provider's
// real SDK: a failure mid-stream ends in band, interrupted, and a
// cancelled call with a *model.CutError; either carries the usage that
// counts the call, priced.
func RunCutCalls(t *testing.T, p Provider, cases []CutCase) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			fake := p.Start(t, tt.Reply)
			m, err := retry.New(retry.Config{
				Primary: retry.Target{Model: p.Model(t, fake, p.ModelName), Policy: FaultPolicy, Name: "priced", Price: cutPrice},
				Clock:   &Clock{}, Logger: slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatal(err)
			}
			usage, cost := cutCall(t, m, tt.Cancel)
			checkCutUsage(t, tt, usage, cost)
		})
	}
}

// cutCall makes the call, cancelling it after the first partial when
// cancel is set, and returns the usage and cost that count it.
func cutCall(t *testing.T, m model.Model, cancel bool) (*agentrunnerv1.UsageMetadata, *agentrunnerv1.Cost) {
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var last *model.Response
	var callErr error
	for r, err := range m.Generate(ctx, HelloRequest(), true) {
		switch {
		case err != nil:
			callErr = err
		case r.Partial && cancel:
			stop()
		case !r.Partial:
			last = r
		}
	}
	if cancel {
		var ce *model.CutError
		if !errors.As(callErr, &ce) {
			t.Fatalf("cancelled call ended with %v (%T), want a *model.CutError", callErr, callErr)
		}
		return ce.Usage, ce.Cost
	}
	if callErr != nil || last == nil || !last.Interrupted || last.ErrorCode == "" {
		t.Fatalf("cut call ended with %v, last response %s; want an interrupted in-band error", callErr, ShowResponse(last))
	}
	return last.Usage, last.Cost
}

func checkCutUsage(t *testing.T, tt CutCase, u *agentrunnerv1.UsageMetadata, c *agentrunnerv1.Cost) {
	t.Helper()
	switch {
	case u == nil:
		t.Fatal("the cut call counts no usage")
	case tt.WantPrompt > 0 && u.GetPromptTokenCount() != tt.WantPrompt:
		t.Errorf("prompt tokens %d, want the %d the provider reported", u.GetPromptTokenCount(), tt.WantPrompt)
	case u.GetPromptTokenCount() < 1 || u.GetCandidatesTokenCount() < 1:
		t.Errorf("usage %v: want the prompt and the streamed text counted", u)
	case u.GetEstimated() != tt.WantEstimated:
		t.Errorf("usage %v: estimated %v, want %v", u, u.GetEstimated(), tt.WantEstimated)
	case u.GetTotalTokenCount() < u.GetPromptTokenCount()+u.GetCandidatesTokenCount():
		t.Errorf("usage %v: the total is less than its parts", u)
	}
	if want := cutPrice.Cost("priced", u); c.GetMicros() != want.GetMicros() || c.GetMicros() <= 0 || c.GetModel() != "priced" {
		t.Errorf("cost %v, want %v: priced like any call", c, want)
	}
}
