package chat_test

import (
	"context"
	"iter"
	"regexp"
	"testing"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/spendfmt"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// testPrice is the price of the "priced" model: 2 per million input
// tokens and 10 per million output tokens, 2 and 10 micro-units a token.
var testPrice = model.Price{Currency: "USD", Input: 2_000_000, Output: 10_000_000}

// pricedModel is the offline model with a price, as the retry wrapper
// of a models entry with a price makes it: its complete responses carry
// their cost.
type pricedModel struct{ inner *offline.Model }

func (m pricedModel) Name() string { return m.inner.Name() }

func (m pricedModel) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		for resp, err := range m.inner.Generate(ctx, req, stream) {
			if err == nil && !resp.Partial && resp.Usage != nil {
				resp.Cost = testPrice.Cost(m.Name(), resp.Usage)
			}
			if !yield(resp, err) {
				return
			}
		}
	}
}

// TestChatShowsCost: the line that ends a run shows its tokens and its
// cost: the price times the tokens when every call was priced, a lower
// bound naming the unpriced calls when some were not. (Runs on unpriced
// models show "cost unknown", and runs without model calls nothing:
// TestChatStreamsTransfersAndResumes and TestChatDemoAppWithoutStreaming.)
func TestChatShowsCost(t *testing.T) {
	addr, _ := startServer(t)
	for _, c := range []struct {
		app, msg string
		unpriced int
	}{
		{"priced", "what does this cost", 0},
		{"mixed", "I have a billing question", 1},
	} {
		t.Run(c.app, func(t *testing.T) {
			s := startChat(t, "--addr", addr, "--app", c.app, "--user", "fay", "--session", "c1")
			s.expect(`you> $`)
			s.typeLine(c.msg)
			s.expect(`\(events #1-#\d+ · tokens [\d,]+ · cost [^\n]*\)\nyou> $`)
			tokens, micros := storedSpend(t, addr, c.app, "fay", "c1")
			want := " · tokens " + spendfmt.Count(tokens) + " · cost " + agent.FormatMicros(micros) + " USD)"
			if c.unpriced > 0 {
				want = " · tokens " + spendfmt.Count(tokens) + " · cost ≥ " + agent.FormatMicros(micros) + " USD (1 call unpriced))"
			}
			if !regexp.MustCompile(`\(events #1-#\d+` + regexp.QuoteMeta(want) + `\n`).MatchString(s.out.String()) {
				t.Errorf("the run's line does not end with %q:\n%s", want, s.out)
			}
			s.typeLine("/quit")
			if err := s.wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// storedSpend reads a session's events and returns their total tokens and
// what the priced model's calls among them cost at testPrice, computed
// from their tokens (not read from the events' costs).
func storedSpend(t *testing.T, addr, app, user, session string) (tokens, micros int64) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got, err := servicev1.NewSessionServiceClient(conn).GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: app, UserId: user, SessionId: session})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range got.GetEvents() {
		u := ev.GetUsageMetadata()
		tokens += int64(u.GetTotalTokenCount())
		// till and front answer on the priced model; billing does not.
		if a := ev.GetAuthor(); a == "till" || a == "front" {
			micros += 2*int64(u.GetPromptTokenCount()) + 10*int64(u.GetCandidatesTokenCount())
		}
	}
	if tokens == 0 || micros == 0 {
		t.Fatalf("session %s/%s/%s has no priced usage: %v", app, user, session, got.GetEvents())
	}
	return tokens, micros
}
