package apps

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/protobuf/encoding/protojson"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/remotea2a"
)

// cardFetchTimeout bounds the fetch of one agent card at start, so that a
// remote host that accepts connections and never answers cannot hold the
// start forever.
const cardFetchTimeout = 30 * time.Second

// validateRemote checks a remote A2A agent: exactly one of card_url (an
// http or https URL) and card (a card with somewhere to call), the name of
// an environment variable in header_env, a positive timeout, and no
// sub-agents (the remote agent's own tree is its team's business).
func validateRemote(a *agentrunnerv1.AgentConfig, path string, errs *errList) {
	r := a.GetRemoteA2A()
	p := path + ".remote_a2a"
	switch {
	case (r.GetCardUrl() == "") == (r.GetCard() == nil):
		errs.add(&Error{Path: p, Msg: "give exactly one of card_url (where the agent card is served) and card (the card inline)"})
	case r.GetCardUrl() != "":
		if msg := checkCardURL(r.GetCardUrl()); msg != "" {
			errs.add(&Error{Path: p + ".card_url", Msg: msg})
		}
	default:
		if _, err := inlineCard(r); err != nil {
			errs.add(&Error{Path: p + ".card", Msg: err.Error()})
		}
	}
	if r.GetHeaderEnv() != "" {
		if err := checkEnvName(r.GetHeaderEnv(), p+".header_env"); err != nil {
			errs.add(err)
		}
		if u, err := url.Parse(r.GetCardUrl()); err == nil && u.Scheme == "http" && !remotea2a.IsLoopback(u.Host) {
			errs.add(&Error{Path: p + ".card_url", Msg: "header_env's header goes only over https (or to a loopback host): use an https card_url"})
		}
	}
	checkRemoteBounds(r, p, errs)
	if _, err := remoteTimeout(r); err != nil {
		errs.add(&Error{Path: p + ".timeout", Msg: err.Error()})
	}
	if len(a.GetSubAgents()) > 0 {
		errs.add(&Error{Path: path + ".sub_agents", Msg: "a remote A2A agent has no sub-agents: its own tree is served by the remote side"})
	}
}

// checkRemoteBounds checks header_hosts (hosts, as URLs name them) and
// the size bounds (not negative).
func checkRemoteBounds(r *agentrunnerv1.RemoteA2AAgentConfig, p string, errs *errList) {
	for i, h := range r.GetHeaderHosts() {
		if u, err := url.Parse("https://" + h); h == "" || err != nil || u.Host != h {
			errs.add(&Error{Path: fmt.Sprintf("%s.header_hosts[%d]", p, i), Msg: fmt.Sprintf("want a host or host:port, got %q", h)})
		}
	}
	if r.GetMaxCardBytes() < 0 || r.GetMaxHistoryEvents() < 0 || r.GetMaxHistoryBytes() < 0 {
		errs.add(&Error{Path: p, Msg: "max_card_bytes, max_history_events and max_history_bytes must not be negative"})
	}
}

// checkCardURL says what is wrong with a card URL, "" when nothing is.
func checkCardURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Sprintf("not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("want an http or https URL, got scheme %q", u.Scheme)
	case u.Host == "":
		return "the URL has no host"
	case u.User != nil:
		// Credentials in the file would be logged and shown with the URL.
		return "the URL carries credentials: send them in a header with header_env instead"
	}
	return ""
}

// inlineCard reads a card given inline.
func inlineCard(r *agentrunnerv1.RemoteA2AAgentConfig) (*a2a.AgentCard, error) {
	data, err := protojson.Marshal(r.GetCard())
	if err != nil {
		return nil, err
	}
	return remotea2a.ParseCard(data)
}

func remoteTimeout(r *agentrunnerv1.RemoteA2AAgentConfig) (time.Duration, error) {
	if r.GetTimeout() == "" {
		return remotea2a.DefaultTimeout, nil
	}
	d, err := time.ParseDuration(r.GetTimeout())
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("timeout %q: want a positive Go duration such as 90s", r.GetTimeout())
	}
	return d, nil
}

// remoteAgent builds a remote A2A agent: its header read from the
// environment, its card fetched (or read inline) and checked. A card that
// cannot be fetched fails the build naming the agent and the URL, unless
// the agent is optional: it is then served unavailable, with a warning.
func (b *builder) remoteAgent(ctx context.Context, a *agentrunnerv1.AgentConfig, path string) (agent.Agent, error) {
	r := a.GetRemoteA2A()
	p := path + ".remote_a2a"
	timeout, err := remoteTimeout(r)
	if err != nil {
		return nil, &Error{Path: p + ".timeout", Msg: err.Error()}
	}
	// The header goes to the card's host and the hosts the config lists
	// (an inline card's among them), never to one a fetched card or a
	// redirect names.
	hosts := slices.Clone(r.GetHeaderHosts())
	if u, err := url.Parse(r.GetCardUrl()); err == nil && u.Host != "" {
		hosts = append(hosts, u.Host)
	}
	cfg := remotea2a.Config{Name: a.GetName(), Description: a.GetDescription(), Timeout: timeout,
		MaxHistoryEvents: int(r.GetMaxHistoryEvents()), MaxHistoryBytes: r.GetMaxHistoryBytes()}
	if r.GetCard() != nil {
		if cfg.Card, err = inlineCard(r); err != nil {
			return nil, &Error{Path: p + ".card", Msg: err.Error()}
		}
		hosts = append(hosts, remotea2a.CardHosts(cfg.Card)...)
	}
	hc, secret, err := remoteHTTPClient(r.GetHeaderEnv(), hosts...)
	if err != nil {
		return nil, &Error{Path: p + ".header_env", Msg: err.Error()}
	}
	cfg.HTTPClient, cfg.Secrets = hc, secret
	if r.GetCard() == nil {
		if err := b.fetchCard(ctx, a, r, p, timeout, &cfg); err != nil {
			return nil, err
		}
	}
	ag, err := remotea2a.New(ctx, cfg)
	if err != nil {
		return nil, &Error{Path: p, Msg: err.Error()}
	}
	return ag, nil
}

// fetchCard fetches the card of cfg's agent, within max_card_bytes. A
// card that cannot be fetched fails the build, unless the agent is
// optional: it is then served unavailable, with a warning. The error is
// the remote's words, so the header's value is cut out of it.
func (b *builder) fetchCard(ctx context.Context, a *agentrunnerv1.AgentConfig, r *agentrunnerv1.RemoteA2AAgentConfig, p string, timeout time.Duration, cfg *remotea2a.Config) error {
	fctx, cancel := context.WithTimeout(ctx, min(timeout, cardFetchTimeout))
	card, err := remotea2a.ResolveCardMax(fctx, cfg.HTTPClient, r.GetCardUrl(), r.GetMaxCardBytes())
	cancel()
	if err == nil {
		cfg.Card = card
		return nil
	}
	err = fmt.Errorf("remote agent %q: fetch its agent card at %s: %w", a.GetName(), r.GetCardUrl(), err)
	err = remotea2a.RedactError(err, cfg.Secrets...)
	if !r.GetOptional() {
		return &Error{Path: p + ".card_url", Msg: err.Error()}
	}
	b.log.WarnContext(ctx, "optional remote A2A agent unavailable: its turns fail in band until the server restarts and reaches it",
		"app", b.appName, "agent", a.GetName(), "card_url", r.GetCardUrl(), "err", err)
	cfg.Unavailable = fmt.Errorf("unavailable: its agent card could not be fetched at start (%w)", err)
	return nil
}

// remoteHTTPClient is the client of a remote agent: the default one, or
// one sending the header held by the environment variable env to hosts;
// and the header's value, the secret to cut out of what the agent shows.
func remoteHTTPClient(env string, hosts ...string) (*http.Client, []string, error) {
	if env == "" {
		return http.DefaultClient, nil, nil
	}
	v, ok := os.LookupEnv(env)
	if !ok {
		return nil, nil, fmt.Errorf("environment variable %s is not set", env)
	}
	hc, err := remotea2a.HeaderClient(v, hosts...)
	if err != nil {
		return nil, nil, errors.New("environment variable " + env + ": " + err.Error())
	}
	return hc, []string{remotea2a.HeaderValue(v)}, nil
}
