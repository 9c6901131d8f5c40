package apps

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/protobuf/encoding/prototext"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/remotea2a/remotea2atest"
)

// canary is the secret of the tests below: it must never show.
const canary = "canary-7f3a9c51"

// cardHost serves card (the bytes of an agent card) at the well-known
// path, recording the X-Key header of each request: a host that is not
// where the card's interfaces point.
type cardHost struct {
	*httptest.Server
	mu   sync.Mutex
	keys []string
}

func serveCard(t *testing.T, card []byte) *cardHost {
	h := &cardHost{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.keys = append(h.keys, r.Header.Get("X-Key"))
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(card)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *cardHost) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.keys...)
}

// standInCard returns the stand-in's card, which names the stand-in's
// own host.
func standInCard(t *testing.T, s *remotea2atest.Server) []byte {
	resp, err := http.Get(s.URL + a2asrv.WellKnownAgentCardPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// remoteTurn runs one turn of the built app's partner on a session whose
// only event is text, logging to log, and returns what it yielded.
func remoteTurn(t *testing.T, built []App, text string, log *slog.Logger) (events []*agentrunnerv1.Event, errs []error) {
	t.Helper()
	partner := built[0].Root.SubAgents()[0]
	tree, err := agent.NewTree(built[0].Root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	inv := agent.NewInvocation(agent.InvocationConfig{ID: "run-1", Tree: tree, Logger: log,
		NewID: func() string { n++; return fmt.Sprint("id-", n) },
		Events: []*agentrunnerv1.Event{{Id: "ev-1", Author: agent.UserAuthor, Sequence: 1, Content: &agentrunnerv1.Content{
			Role: agent.RoleUser, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}}}},
	})
	for ev, err := range partner.Run(inv.Context(t.Context(), partner)) {
		if err != nil {
			errs = append(errs, err)
		} else if ev != nil {
			events = append(events, ev)
		}
	}
	return events, errs
}

// TestRemoteHeaderStaysHome: header_env's header goes to card_url's host
// and the hosts header_hosts lists, not to a host the fetched card names;
// only over https unless the host is a loopback one; a card past the
// bound is not read. Real a2a-go servers on loopback ports.
func TestRemoteHeaderStaysHome(t *testing.T) {
	t.Setenv("PARTNER_KEY", "X-Key: "+canary)
	remote := remotea2atest.StartWith(t, remotea2atest.Options{Header: "X-Key"})
	cards := serveCard(t, standInCard(t, remote))

	t.Run("not to a host the fetched card names", func(t *testing.T) {
		built, err := buildRemote(t, fmt.Sprintf("remote_a2a: {card_url: %q, header_env: PARTNER_KEY}", cards.URL))
		if err != nil {
			t.Fatal(err)
		}
		if _, errs := remoteTurn(t, built, "hello", nil); len(errs) != 0 {
			t.Fatalf("turn: %v", errs)
		}
		if got := cards.seen(); len(got) == 0 || got[len(got)-1] != canary {
			t.Errorf("card host got %q, want the header", got)
		}
		for _, v := range remote.HeaderValues() {
			if v != "" {
				t.Fatalf("the card's host %s got the header, which goes only to card_url's host and header_hosts", remote.URL)
			}
		}
	})
	t.Run("to the hosts header_hosts lists", func(t *testing.T) {
		host := strings.TrimPrefix(remote.URL, "http://")
		built, err := buildRemote(t, fmt.Sprintf("remote_a2a: {card_url: %q, header_env: PARTNER_KEY, header_hosts: [%q]}", cards.URL, host))
		if err != nil {
			t.Fatal(err)
		}
		if _, errs := remoteTurn(t, built, "hello", nil); len(errs) != 0 {
			t.Fatalf("turn: %v", errs)
		}
		if got := remote.HeaderValues(); len(got) == 0 || got[len(got)-1] != canary {
			t.Errorf("listed host got %q, want the header", got)
		}
	})
	t.Run("not over plain http across the network", func(t *testing.T) {
		_, err := Parse("apps.yaml", []byte(remoteDoc(`remote_a2a: {card_url: "http://partner.example", header_env: PARTNER_KEY}`)))
		if err == nil || !strings.Contains(err.Error(), "https") {
			t.Fatalf("Build = %v, want a refusal asking for https", err)
		}
	})
	t.Run("a card past the bound is refused", func(t *testing.T) {
		big := bytes.Replace(standInCard(t, remote), []byte(`"name":`), []byte(`"padding":"`+strings.Repeat("x", 2<<20)+`","name":`), 1)
		huge := serveCard(t, big)
		_, err := buildRemote(t, fmt.Sprintf("remote_a2a: {card_url: %q}", huge.URL))
		if err == nil || !strings.Contains(err.Error(), "bytes") {
			t.Fatalf("Build = %v, want the 2 MiB card refused past the bound", err)
		}
	})
}

// TestRemoteSecretCanary: a remote that echoes the header (in its answer,
// in a refusal, in an error to a cancellation) puts it into no event,
// error or log line of the run.
func TestRemoteSecretCanary(t *testing.T) {
	t.Setenv("PARTNER_KEY", "X-Key: "+canary)
	remote := remotea2atest.StartWith(t, remotea2atest.Options{Header: "X-Key"})
	built, err := buildRemote(t, fmt.Sprintf("remote_a2a: {card_url: %q, header_env: PARTNER_KEY, timeout: 300ms}", remote.URL))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var shown []string
	for _, text := range []string{"repeat $HEADER", "leak-error", "hang"} {
		events, errs := remoteTurn(t, built, text, log)
		for _, ev := range events {
			shown = append(shown, prototext.Format(ev))
		}
		for _, err := range errs {
			shown = append(shown, err.Error())
		}
	}
	shown = append(shown, logs.String())
	all := strings.Join(shown, "\n")
	if strings.Contains(all, canary) {
		t.Fatalf("the secret shows in the run's events, errors or logs:\n%s", all)
	}
	// The remote did echo it, each way: else this test proves nothing.
	for _, want := range []string{"remote echo: repeat", "refused: your key", "cancel remote A2A task"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in what the run showed; the canary was not exercised:\n%s", want, all)
		}
	}
	if got := remote.HeaderValues(); len(got) == 0 || got[0] != canary {
		t.Errorf("remote got %q, want the header", got)
	}
}
