package apps

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/remotea2a/remotea2atest"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
)

func remoteDoc(remote string) string {
	return "apps:\n  - name: a\n    root_agent:\n      name: r\n      llm: {model: m}\n      sub_agents:\n        - name: partner\n          " + remote + "\n"
}

func TestParseRemoteA2AErrors(t *testing.T) {
	tests := []struct {
		name, remote string
		want         []string // substrings of the error
	}{
		{"neither card_url nor card", "remote_a2a: {timeout: 1m}",
			[]string{"apps.yaml:8", "apps[0].root_agent.sub_agents[0].remote_a2a", "exactly one of card_url"}},
		{"both", `remote_a2a: {card_url: "https://x.example", card: {name: x}}`,
			[]string{"remote_a2a", "exactly one of card_url"}},
		{"not http", `remote_a2a: {card_url: "ftp://x.example/card.json"}`,
			[]string{"apps.yaml:8", "remote_a2a.card_url", `scheme "ftp"`}},
		{"no host", `remote_a2a: {card_url: "https:///card.json"}`,
			[]string{"remote_a2a.card_url", "no host"}},
		{"credentials in the URL", `remote_a2a: {card_url: "https://me:pw@x.example"}`,
			[]string{"remote_a2a.card_url", "header_env"}},
		{"inline card without interfaces", `remote_a2a: {card: {name: x}}`,
			[]string{"remote_a2a.card", "no supported interface"}},
		{"a token in header_env", `remote_a2a: {card_url: "https://x.example", header_env: "Bearer abcdef"}`,
			[]string{"remote_a2a.header_env", "bearer token"}},
		{"bad timeout", `remote_a2a: {card_url: "https://x.example", timeout: soon}`,
			[]string{"remote_a2a.timeout", `timeout "soon"`}},
		{"sub-agents", "remote_a2a: {card_url: \"https://x.example\"}\n          sub_agents: [{name: s, llm: {model: m}}]",
			[]string{"apps[0].root_agent.sub_agents[0].sub_agents", "no sub-agents"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("apps.yaml", []byte(remoteDoc(tc.remote)))
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "abcdef") {
				t.Errorf("error %q shows header_env's value", err)
			}
		})
	}
}

func buildRemote(t *testing.T, remote string) ([]App, error) {
	t.Helper()
	cfg, err := Parse("apps.yaml", []byte(remoteDoc(remote)))
	if err != nil {
		t.Fatal(err)
	}
	models := func(context.Context, string) (model.Model, error) { return offline.New(offline.Config{}), nil }
	return Builder{Models: models}.Build(t.Context(), cfg)
}

// closedURL is a URL nothing listens on.
func closedURL(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return "http://" + addr
}

func TestBuildRemoteA2A(t *testing.T) {
	t.Run("an unreachable card fails the start naming the agent and URL", func(t *testing.T) {
		url := closedURL(t)
		_, err := buildRemote(t, fmt.Sprintf("remote_a2a: {card_url: %q}", url))
		if err == nil || !strings.Contains(err.Error(), `remote agent "partner"`) || !strings.Contains(err.Error(), url) {
			t.Fatalf("Build = %v, want an error naming partner and %s", err, url)
		}
	})

	t.Run("an optional one is served unavailable, failing in band", func(t *testing.T) {
		built, err := buildRemote(t, fmt.Sprintf("remote_a2a: {card_url: %q, optional: true}", closedURL(t)))
		if err != nil {
			t.Fatal(err)
		}
		partner := built[0].Root.SubAgents()[0]
		tree, err := agent.NewTree(built[0].Root)
		if err != nil {
			t.Fatal(err)
		}
		if k := tree.Kind(partner); k != agentrunnerv1.AgentKind_AGENT_KIND_REMOTE_A2A {
			t.Errorf("kind = %v", k)
		}
		inv := agent.NewInvocation(agent.InvocationConfig{ID: "inv", Tree: tree, NewID: func() string { return "1" }})
		var errs []error
		for ev, err := range partner.Run(inv.Context(t.Context(), partner)) {
			if err != nil {
				errs = append(errs, err)
			} else if ev != nil {
				t.Errorf("unexpected event %v", ev)
			}
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "unavailable") {
			t.Errorf("errors = %v, want one saying the agent is unavailable", errs)
		}
	})

	t.Run("header_env is sent with the card fetch; the description comes from the card", func(t *testing.T) {
		remote := remotea2atest.Start(t)
		var mu sync.Mutex
		var got string
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = r.Header.Get("Authorization")
			mu.Unlock()
			http.Redirect(w, r, remote.URL+r.URL.Path, http.StatusTemporaryRedirect)
		}))
		defer proxy.Close()
		t.Setenv("PARTNER_AUTH", "Authorization: Bearer s3cret")
		built, err := buildRemote(t, fmt.Sprintf("remote_a2a: {card_url: %q, header_env: PARTNER_AUTH}", proxy.URL))
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if got != "Bearer s3cret" {
			t.Errorf("Authorization = %q, want the header of PARTNER_AUTH", got)
		}
		if d := built[0].Root.SubAgents()[0].Description(); !strings.Contains(d, "Another team's agent") {
			t.Errorf("description = %q, want the card's", d)
		}
	})

	t.Run("a header_env that holds no header fails without showing it", func(t *testing.T) {
		t.Setenv("PARTNER_AUTH", "s3cret")
		_, err := buildRemote(t, `remote_a2a: {card_url: "http://127.0.0.1:1", header_env: PARTNER_AUTH}`)
		if err == nil || !strings.Contains(err.Error(), "header_env") || strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("Build = %v, want a header_env error without the value", err)
		}
	})
}
