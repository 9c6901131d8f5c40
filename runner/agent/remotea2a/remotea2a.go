package remotea2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
)

const (
	// MetadataKey is the key of Event.custom_metadata under which the
	// agent's events carry the remote context id, task id and task state.
	MetadataKey = "a2a"
	// InputRequiredName is the reserved function the agent calls when the
	// remote task needs input; the caller answers it.
	InputRequiredName = "a2a_input_required"
	// DefaultTimeout bounds one turn of the remote agent when the config
	// gives none.
	DefaultTimeout = 5 * time.Minute
	// cancelTimeout bounds the best-effort cancellation of a remote task
	// our side gave up on.
	cancelTimeout = 5 * time.Second
)

// Config configures a remote A2A agent.
type Config struct {
	// Name is the agent's name in the tree; Description what it does, for
	// LLM agents choosing a transfer target (empty takes the card's).
	Name, Description string
	// Card is the remote agent's card, fetched (ResolveCard) or parsed
	// (ParseCard) at start. Nil only with Unavailable set.
	Card *a2a.AgentCard
	// HTTPClient makes every call; nil is http.DefaultClient. HeaderClient
	// makes one that adds a header.
	HTTPClient *http.Client
	// Timeout bounds one turn; zero is DefaultTimeout.
	Timeout time.Duration
	// Unavailable, when set, says why the agent cannot be called (an
	// optional agent whose card could not be fetched at start): each turn
	// yields it as an in-band error.
	Unavailable error
	// MaxAnswerBytes bounds what the remote agent sends back in one turn:
	// the body of its response (JSON, or the event stream of a streamed
	// turn). Past it the turn fails in band and the remote task is
	// cancelled. Zero is DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	// Log logs what no turn reports (a failed cancellation of an
	// abandoned task); nil is slog.Default().
	Log *slog.Logger
	// Secrets are cut out of the agent's errors, events and logs (as
	// Redacted): the value of the header HeaderClient sends, which a
	// remote may echo.
	Secrets []string
	// MaxHistoryEvents and MaxHistoryBytes bound what one turn sends of
	// the session: its newest events, up to this many, and up to this
	// many bytes of their text; the newest event is always sent. Zero is
	// DefaultMaxHistoryEvents, DefaultMaxHistoryBytes.
	MaxHistoryEvents int
	MaxHistoryBytes  int64
}

// Defaults of what a turn sends of the session (Config.MaxHistoryEvents,
// MaxHistoryBytes): a first turn would otherwise send the whole session
// to a third party.
const (
	DefaultMaxHistoryEvents = 20
	DefaultMaxHistoryBytes  = 64 << 10
)

// DefaultMaxCardBytes bounds a fetched agent card (ResolveCard): a card
// is a few kilobytes.
const DefaultMaxCardBytes = 1 << 20

// DefaultMaxAnswerBytes is the default of Config.MaxAnswerBytes: twice the
// largest event the server stores by default (32 MiB a message), room for
// JSON's encoding of an answer that can still be stored. A remote agent
// that answers more can only fail the run, and is stopped before its
// answer fills the server's memory.
const DefaultMaxAnswerBytes = 64 << 20

// ErrAnswerTooLarge is the error of a turn whose answer passed
// Config.MaxAnswerBytes.
var ErrAnswerTooLarge = errors.New("answer too large")

// New returns the agent. The A2A client is made here, once: a card that
// offers no transport this client speaks fails now, at start, not on the
// first turn.
func New(ctx context.Context, cfg Config) (agent.Agent, error) {
	r := &remote{name: cfg.Name, timeout: cfg.Timeout, unavailable: cfg.Unavailable, log: cfg.Log,
		redact: newRedactor(cfg.Secrets...), maxEvents: cfg.MaxHistoryEvents, maxBytes: cfg.MaxHistoryBytes}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.log = r.redact.logger(r.log)
	if r.maxEvents <= 0 {
		r.maxEvents = DefaultMaxHistoryEvents
	}
	if r.maxBytes <= 0 {
		r.maxBytes = DefaultMaxHistoryBytes
	}
	r.unavailable = r.redact.err(r.unavailable)
	if cfg.Card == nil && cfg.Unavailable == nil {
		return nil, fmt.Errorf("remote agent %q: a card is required", cfg.Name)
	}
	desc := cfg.Description
	if cfg.Card != nil {
		if desc == "" {
			desc = cfg.Card.Description
		}
		hc := capAnswers(cfg.HTTPClient, cfg.MaxAnswerBytes)
		// Only JSON-RPC and HTTP+JSON: see the package doc on gRPC.
		c, err := a2aclient.NewFromCard(ctx, cfg.Card, a2aclient.WithDefaultsDisabled(),
			a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc))
		if err != nil {
			return nil, fmt.Errorf("remote agent %q: card %q: %w", cfg.Name, cfg.Card.Name, err)
		}
		r.client, r.streaming = c, cfg.Card.Capabilities.Streaming
	}
	return agent.New(agent.Config{
		Name:        cfg.Name,
		Description: desc,
		Kind:        agentrunnerv1.AgentKind_AGENT_KIND_REMOTE_A2A,
		Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
			return func(yield func(*agentrunnerv1.Event, error) bool) { r.turn(ctx, r.scrubbed(yield)) }
		},
		Abandon: r.abandon,
	})
}

// client is what the agent calls of *a2aclient.Client.
type client interface {
	SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error)
	SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error]
	CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error)
}

// remote is the state of one remote agent: fixed at start, shared by its
// concurrent turns (in other sessions), never written afterwards.
type remote struct {
	name        string
	client      client
	streaming   bool
	timeout     time.Duration
	unavailable error
	log         *slog.Logger
	redact      redactor
	maxEvents   int
	maxBytes    int64
}

// scrubbed is yield with the secrets cut out of each event and error.
func (r *remote) scrubbed(yield func(*agentrunnerv1.Event, error) bool) func(*agentrunnerv1.Event, error) bool {
	return func(ev *agentrunnerv1.Event, err error) bool {
		r.redact.event(ev)
		return yield(ev, r.redact.err(err))
	}
}

// ResolveCard fetches a card of at most DefaultMaxCardBytes
// (ResolveCardMax).
func ResolveCard(ctx context.Context, hc *http.Client, cardURL string) (*a2a.AgentCard, error) {
	return ResolveCardMax(ctx, hc, cardURL, DefaultMaxCardBytes)
}

// ResolveCardMax fetches a card. A cardURL whose path ends in ".json" is
// read as it is; any other is a base URL, read at the well-known path
// under it. A card past max bytes (zero: DefaultMaxCardBytes) fails with
// ErrAnswerTooLarge, read no further.
func ResolveCardMax(ctx context.Context, hc *http.Client, cardURL string, max int64) (*a2a.AgentCard, error) {
	if max <= 0 {
		max = DefaultMaxCardBytes
	}
	hc = capAnswers(hc, max)
	u, err := url.Parse(cardURL)
	if err != nil {
		return nil, fmt.Errorf("card URL: %w", err)
	}
	base, opts := cardURL, []agentcard.ResolveOption(nil)
	if strings.HasSuffix(u.Path, ".json") {
		path := u.Path
		u.Path, u.RawPath = "", ""
		base, opts = u.String(), []agentcard.ResolveOption{agentcard.WithPath(path)}
	}
	card, err := agentcard.NewResolver(hc).Resolve(ctx, base, opts...)
	if err != nil {
		return nil, err
	}
	return card, checkCard(card)
}

// ParseCard reads a card given inline, as JSON.
func ParseCard(data []byte) (*a2a.AgentCard, error) {
	var card a2a.AgentCard
	if err := json.Unmarshal(data, &card); err != nil {
		return nil, fmt.Errorf("agent card: %w", err)
	}
	return &card, checkCard(&card)
}

// checkCard checks what the client needs of a card: somewhere to call.
func checkCard(card *a2a.AgentCard) error {
	for _, iface := range card.SupportedInterfaces {
		if iface != nil && iface.URL != "" {
			return nil
		}
	}
	return errors.New("agent card lists no supported interface with a URL")
}

// HeaderClient returns an HTTP client that sends header, "Name: value",
// with every request to one of hosts ("host" or "host:port", as URLs name
// them) over https, or over http to a loopback host (IsLoopback), and
// with no other: a redirect elsewhere, a URL a card names on another
// host, or plain http across the network does not get it. Errors never
// show the value, which is a secret: pass HeaderValue's to
// Config.Secrets.
func HeaderClient(header string, hosts ...string) (*http.Client, error) {
	name, value, ok := strings.Cut(header, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || name == "" || value == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
		return nil, errors.New(`want a header "Name: value" (the value is not shown, as it may be a secret)`)
	}
	t := headerTransport{name: http.CanonicalHeaderKey(name), value: value, hosts: map[string]bool{}, base: http.DefaultTransport}
	for _, h := range hosts {
		t.hosts[strings.ToLower(h)] = true
	}
	return &http.Client{Transport: t}, nil
}

// CardHosts returns the hosts of the URLs card's interfaces name.
func CardHosts(card *a2a.AgentCard) []string {
	var hosts []string
	for _, iface := range card.SupportedInterfaces {
		if iface == nil {
			continue
		}
		if u, err := url.Parse(iface.URL); err == nil && u.Host != "" {
			hosts = append(hosts, u.Host)
		}
	}
	return hosts
}

// headerTransport adds one header to each request to one of its hosts.
type headerTransport struct {
	name, value string
	hosts       map[string]bool
	base        http.RoundTripper
}

// HeaderValue is the value of a header "Name: value", the secret part.
func HeaderValue(header string) string {
	_, v, _ := strings.Cut(header, ":")
	return strings.TrimSpace(v)
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	host := strings.ToLower(req.URL.Host)
	if !t.hosts[host] || (req.URL.Scheme != "https" && !IsLoopback(host)) {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context()) // a RoundTripper must not change the caller's request
	req.Header.Set(t.name, t.value)
	return t.base.RoundTrip(req)
}

// capAnswers returns a copy of hc (nil: http.DefaultClient) whose
// responses fail once their body passes max bytes (zero:
// DefaultMaxAnswerBytes) with ErrAnswerTooLarge.
func capAnswers(hc *http.Client, max int64) *http.Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	if max <= 0 {
		max = DefaultMaxAnswerBytes
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c := *hc
	c.Transport = capTransport{base: base, max: max}
	return &c
}

// capTransport bounds the body of each response (capAnswers).
type capTransport struct {
	base http.RoundTripper
	max  int64
}

func (t capTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil && resp.Body != nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: t.max, max: t.max}
	}
	return resp, err
}

// cappedBody reads up to left more bytes, then fails.
type cappedBody struct {
	io.ReadCloser
	left, max int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly max bytes, which is
		// within the bound, from a longer one.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("the remote agent's response passes %d bytes: %w", b.max, ErrAnswerTooLarge)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
