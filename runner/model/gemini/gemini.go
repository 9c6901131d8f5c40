// Package gemini implements model.Model on Google's Gemini models through
// google.golang.org/genai. It is the only package in agentrunner that
// imports genai: requests and responses are converted between
// agentrunner.v1 messages and genai types here, and nowhere else.
//
// The client is created from the standard environment, so any deployment
// genai supports works without code changes:
//
//   - GOOGLE_API_KEY or GEMINI_API_KEY for the Gemini Developer API;
//   - GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and
//     GOOGLE_CLOUD_LOCATION (and application default credentials) for
//     Vertex AI;
//   - GOOGLE_GEMINI_BASE_URL to send requests elsewhere, for example to a
//     fake server in tests.
//
// Failed calls are returned as a *model.Error with a stable code, and API
// errors (HTTP 4xx and 5xx) as an *APIError inside it. Answers the model
// refused or cut short (a blocked prompt, a SAFETY or MAX_TOKENS stop) are
// not Go errors: they come back as a Response with ErrorCode and
// ErrorMessage set, which the runner records as an event.
//
// Imports: model, the generated messages and genai. It must not import the
// runner, agents, tools, plugins, store or gRPC directly
// (runner/deps_test.go checks).
package gemini

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"strings"
	"time"

	"google.golang.org/genai"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// Model is a Gemini model. It is safe for concurrent use.
type Model struct {
	client  *genai.Client
	backend genai.Backend
	name    string
	log     *slog.Logger
	// caches are the context caches this model made (see
	// model.Request.Cache).
	caches *contextCache
}

var _ model.Model = (*Model)(nil)

// Option configures New.
type Option func(*options)

type options struct {
	client *genai.Client
	config *genai.ClientConfig
	log    *slog.Logger
	idle   time.Duration
}

// WithIdleTimeout bounds the silence of a response once its headers have
// arrived (see model.IdleTimeout) on the client New creates; a client
// given with WithClient is the caller's and is left alone.
func WithIdleTimeout(d time.Duration) Option {
	return func(o *options) { o.idle = d }
}

// WithLogger makes the model log what it does about context caches; by
// default it logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.log = l }
}

// WithClient makes the model use c instead of creating a client. It wins
// over WithClientConfig.
func WithClient(c *genai.Client) Option {
	return func(o *options) { o.client = c }
}

// WithClientConfig creates the client from cc instead of from the
// environment alone. genai still fills fields left empty from the
// environment. cc is copied, not modified.
func WithClientConfig(cc genai.ClientConfig) Option {
	return func(o *options) { o.config = &cc }
}

// WithAPIKey makes the model call the Gemini API with key, at baseURL when
// it is not empty, whatever the environment says about Vertex AI: an apps
// file's model entry that names its own key variable means that key.
func WithAPIKey(key, baseURL string) Option {
	return func(o *options) {
		o.config = &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: baseURL}}
	}
}

// New returns the Gemini model modelName, for example "gemini-2.5-flash".
// Without options the genai client is configured from the environment; it
// fails when no credentials are found there (see CredentialsFromEnv).
func New(ctx context.Context, modelName string, opts ...Option) (*Model, error) {
	if modelName == "" {
		return nil, errors.New("gemini: empty model name")
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	client := o.client
	if client == nil {
		// genai writes the resolved settings back into the config it is
		// given, so it gets a copy.
		cc := genai.ClientConfig{}
		if o.config != nil {
			cc = *o.config
		}
		var err error
		client, err = genai.NewClient(ctx, &cc)
		if err != nil {
			return nil, fmt.Errorf("gemini: create client for model %q: %w", modelName, err)
		}
		// The client is ours: its transport may record error headers
		// (header.go) for Retry-After, and bound silences.
		wrapTransport(client.ClientConfig().HTTPClient, o.idle)
	}
	log := o.log
	if log == nil {
		log = discardLogger()
	}
	return &Model{client: client, backend: client.ClientConfig().Backend, name: modelName, log: log, caches: newContextCache()}, nil
}

// CachesContext reports that the model acts on model.Request.Cache.
func (m *Model) CachesContext() bool { return true }

// CredentialsFromEnv reports whether the environment holds what New needs to
// reach Gemini: an API key (GOOGLE_API_KEY or GEMINI_API_KEY), or Vertex AI
// selected (GOOGLE_GENAI_USE_VERTEXAI or GOOGLE_GENAI_USE_ENTERPRISE true)
// with a GOOGLE_CLOUD_PROJECT. It does not check that the credentials work.
// The server uses it to fall back to the offline model.
func CredentialsFromEnv() bool {
	return credentialsFrom(os.Getenv)
}

func credentialsFrom(getenv func(string) string) bool {
	if getenv("GOOGLE_API_KEY") != "" || getenv("GEMINI_API_KEY") != "" {
		return true
	}
	isTrue := func(k string) bool {
		v := strings.ToLower(getenv(k))
		return v == "1" || v == "true"
	}
	vertex := isTrue("GOOGLE_GENAI_USE_VERTEXAI") || isTrue("GOOGLE_GENAI_USE_ENTERPRISE")
	return vertex && getenv("GOOGLE_CLOUD_PROJECT") != ""
}

// Name returns the model name given to New.
func (m *Model) Name() string { return m.name }

// Generate calls the model; see model.Model.
//
// With stream true, each chunk that carries text (answer or thought) is
// yielded as a partial Response holding that chunk's text parts; function
// calls and data parts appear only in the complete Response that ends the
// sequence, so a consumer can never act on a partial call. The complete
// Response aggregates all chunks: consecutive text parts merged, thought text
// merged separately, usage from the last chunk that has it.
func (m *Model) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if req == nil {
			yield(nil, errors.New("gemini: nil request"))
			return
		}
		name := m.name
		if req.Model != "" {
			name = req.Model
		}
		contents := toGenaiContents(req.Contents, m.backend)
		cfg := toGenaiConfig(req)
		if req.Cache != nil {
			cc, ccfg, e := m.withCache(ctx, name, contents, cfg, req.Cache)
			if e != nil {
				err := m.call(ctx, name, cc, ccfg, stream, yield, cacheGone)
				if err == nil {
					return
				}
				m.caches.forget(e)
				m.log.WarnContext(ctx, "context cache: a call through the cache failed; sent whole", "model", name, "cache", e.name, "err", err)
			}
		}
		m.call(ctx, name, contents, cfg, stream, yield, nil)
	}
}

// call makes the call. When hold is set, an error it accepts, met before
// anything reached the consumer, is returned instead of yielded, for the
// caller to try otherwise.
func (m *Model) call(ctx context.Context, name string, contents []*genai.Content, cfg *genai.GenerateContentConfig, stream bool, yield func(*model.Response, error) bool, hold func(error) bool) error {
	ctx, rec := withErrorHeader(ctx)
	var held error
	sent := false
	y := func(r *model.Response, err error) bool {
		if err != nil && !sent && hold != nil && hold(err) {
			held = err
			return false
		}
		sent = true
		return yield(r, err)
	}
	if !stream {
		m.generate(ctx, name, contents, cfg, rec, y)
	} else {
		m.generateStream(ctx, name, contents, cfg, rec, y)
	}
	return held
}

func (m *Model) generate(ctx context.Context, name string, contents []*genai.Content, cfg *genai.GenerateContentConfig, rec *errorHeader, yield func(*model.Response, error) bool) {
	var r *genai.GenerateContentResponse
	err := guard(func() error {
		var err error
		r, err = m.client.Models.GenerateContent(ctx, name, contents, cfg)
		return err
	})
	if err != nil {
		yield(nil, wrapError(ctx, name, rec.get(), err))
		return
	}
	acc := accumulator{}
	if _, err := acc.add(r); err != nil {
		yield(nil, unexpected(fmt.Errorf("gemini model %q: %w", name, err)))
		return
	}
	yield(acc.response(), nil)
}

func (m *Model) generateStream(ctx context.Context, name string, contents []*genai.Content, cfg *genai.GenerateContentConfig, rec *errorHeader, yield func(*model.Response, error) bool) {
	// The stream is pulled rather than ranged over so that our consumer's
	// code (yield) never runs inside genai's iterator: a panic in genai is
	// then recovered by guard without ever swallowing one of the consumer's.
	next, stop := iter.Pull2(m.client.Models.GenerateContentStream(ctx, name, contents, cfg))
	defer stop()
	acc := accumulator{mergeText: true}
	for {
		var (
			chunk *genai.GenerateContentResponse
			ok    bool
		)
		err := guard(func() error {
			var err error
			chunk, err, ok = next()
			return err
		})
		if err != nil {
			// The usage the chunks so far reported counts the cut call.
			yield(nil, model.WithUsage(wrapError(ctx, name, rec.get(), err), fromGenaiUsage(acc.usage)))
			return
		}
		if !ok {
			break
		}
		content, err := acc.add(chunk)
		if err != nil {
			yield(nil, model.WithUsage(unexpected(fmt.Errorf("gemini model %q: %w", name, err)), fromGenaiUsage(acc.usage)))
			return
		}
		if partial := textOnly(content); partial != nil {
			resp := &model.Response{Content: partial, Partial: true, ModelVersion: chunk.ModelVersion}
			if !yield(resp, nil) {
				return
			}
		}
	}
	// Should the stream end without an error after ctx was cancelled, the
	// chunks seen so far are not the whole answer: do not present them as
	// the complete response.
	if err := ctx.Err(); err != nil {
		yield(nil, model.WithUsage(fmt.Errorf("gemini model %q: %w", name, err), fromGenaiUsage(acc.usage)))
		return
	}
	yield(acc.response(), nil)
}

// errClientPanic marks a panic inside the genai client, which it raises on
// some malformed responses (a null candidate, for one).
var errClientPanic = errors.New("genai client panicked on the response")

// guard runs f, turning a panic into an error: an odd response from the
// server must fail one call, not crash the process.
func guard(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errClientPanic, p)
		}
	}()
	return f()
}

// textOnly returns c with only its non-empty text parts, or nil if it has
// none. An empty text part only carries a thought signature, which the
// complete response keeps; as a partial it would show nothing.
func textOnly(c *agentrunnerv1.Content) *agentrunnerv1.Content {
	if c == nil {
		return nil
	}
	var parts []*agentrunnerv1.Part
	for _, p := range c.Parts {
		if t, ok := p.Data.(*agentrunnerv1.Part_Text); ok && t.Text != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	role := c.Role
	if role == "" {
		role = genai.RoleModel
	}
	return &agentrunnerv1.Content{Role: role, Parts: parts}
}
