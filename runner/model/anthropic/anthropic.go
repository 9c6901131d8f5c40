// Package anthropic implements model.Model on Anthropic's Messages API
// through github.com/anthropics/anthropic-sdk-go. It is the only package in
// agentrunner that imports that SDK: requests and responses are converted
// between agentrunner.v1 messages and the SDK's types here, and nowhere
// else.
//
// The SDK's own environment (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) is not
// read: the key and the URL come from the Config alone, so that what the
// app config says is what is called. The SDK's own retries are off: a
// failed call is returned at once, classified as a *model.Error, and
// retrying is the retry package's job.
//
// Imports: model, the generated messages and the SDK. It must not import
// the runner, agents, tools, plugins, store or gRPC directly
// (runner/deps_test.go checks).
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// DefaultBaseURL is Anthropic's own API.
const DefaultBaseURL = "https://api.anthropic.com/"

// DefaultMaxTokens is the output limit sent when the agent sets none: the
// Messages API requires one.
const DefaultMaxTokens = 4096

// Config configures a Model.
type Config struct {
	// Model is the model id, for example "claude-sonnet-4-5". Required.
	Model string
	// APIKey is sent as x-api-key.
	APIKey string
	// BaseURL is where the API is; empty means DefaultBaseURL.
	BaseURL string
	// HTTPClient makes the requests; nil means a client of its own.
	HTTPClient *http.Client
	// IdleTimeout bounds the silence of a response once its headers have
	// arrived (see model.IdleTimeout); zero means none. The HTTPClient is
	// not changed: the model uses a copy with the bound on its transport.
	IdleTimeout time.Duration
	// MaxTokens is the output limit when the request sets none; zero means
	// DefaultMaxTokens.
	MaxTokens int64
	// Options are further SDK request options. They come last and win.
	Options []option.RequestOption
}

// Model is a Claude model. It is safe for concurrent use.
type Model struct {
	messages  anthropic.MessageService
	name      string
	maxTokens int64
}

var _ model.Model = (*Model)(nil)

// New returns the model cfg describes. It makes no request.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("anthropic: empty model name")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(model.IdleClient(cfg.HTTPClient, cfg.IdleTimeout)),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	opts = append(opts, cfg.Options...)
	maxTokens := cfg.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	// The message service alone, not anthropic.NewClient: the client would
	// add the ANTHROPIC_* environment, which must not override the config.
	return &Model{messages: anthropic.NewMessageService(opts...), name: cfg.Model, maxTokens: maxTokens}, nil
}

// Name returns the model id.
func (m *Model) Name() string { return m.name }

// Generate calls the model; see model.Model.
//
// With stream true, each text or thinking delta is yielded as a partial
// Response; tool calls appear only in the complete Response that ends the
// sequence, their input whole, so a consumer never acts on half a call.
func (m *Model) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if req == nil {
			yield(nil, errors.New("anthropic: nil request"))
			return
		}
		name := m.name
		if req.Model != "" {
			name = req.Model
		}
		params, err := m.toParams(name, req)
		if err != nil {
			yield(nil, &model.Error{Code: model.CodeInvalidArgument, Err: fmt.Errorf("anthropic model %q: %w", name, err)})
			return
		}
		if stream {
			m.generateStream(ctx, name, params, yield)
			return
		}
		m.generate(ctx, name, params, yield)
	}
}

func (m *Model) generate(ctx context.Context, name string, params anthropic.MessageNewParams, yield func(*model.Response, error) bool) {
	var httpResp *http.Response
	msg, err := m.messages.New(ctx, params, option.WithResponseInto(&httpResp))
	if err != nil {
		yield(nil, wrapError(ctx, name, httpResp, err))
		return
	}
	resp, err := fromMessage(msg)
	if err != nil {
		yield(nil, fmt.Errorf("anthropic model %q: %w", name, err))
		return
	}
	yield(resp, nil)
}

func (m *Model) generateStream(ctx context.Context, name string, params anthropic.MessageNewParams, yield func(*model.Response, error) bool) {
	var httpResp *http.Response
	s := m.messages.NewStreaming(ctx, params, option.WithResponseInto(&httpResp))
	defer s.Close()
	var (
		msg     anthropic.Message
		stopped bool
	)
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			yield(nil, model.WithUsage(fmt.Errorf("anthropic model %q: %w", name, model.Unavailable("malformed stream: %w", err)), usageSoFar(&msg)))
			return
		}
		stopped = stopped || ev.Type == "message_stop"
		if p := deltaPart(ev); p != nil {
			partial := &model.Response{
				Content:      &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{p}},
				Partial:      true,
				ModelVersion: string(msg.Model),
			}
			if !yield(partial, nil) {
				return
			}
		}
	}
	// A cut call's usage so far (message_start's input, message_delta's
	// output) counts it.
	if err := s.Err(); err != nil {
		yield(nil, model.WithUsage(wrapError(ctx, name, httpResp, err), usageSoFar(&msg)))
		return
	}
	if err := ctx.Err(); err != nil {
		yield(nil, model.WithUsage(fmt.Errorf("anthropic model %q: %w", name, err), usageSoFar(&msg)))
		return
	}
	if !stopped {
		// The stream ended without message_stop: a proxy closed it, or
		// the server went away between events. What came is not the
		// whole answer.
		yield(nil, model.WithUsage(fmt.Errorf("anthropic model %q: %w", name, model.Unavailable("the stream ended before the answer was complete")), usageSoFar(&msg)))
		return
	}
	resp, err := fromMessage(&msg)
	if err != nil {
		yield(nil, fmt.Errorf("anthropic model %q: %w", name, err))
		return
	}
	yield(resp, nil)
}

// usageSoFar is the usage the stream's events reported, nil before any
// did (message_start carries the input's).
func usageSoFar(msg *anthropic.Message) *agentrunnerv1.UsageMetadata {
	return toUsage(msg.Usage)
}

// deltaPart is the text a stream event adds, as a part to stream: answer
// text, or thinking as a thought. Tool input deltas are not streamed.
func deltaPart(ev anthropic.MessageStreamEventUnion) *agentrunnerv1.Part {
	if ev.Type != "content_block_delta" {
		return nil
	}
	switch ev.Delta.Type {
	case "text_delta":
		if ev.Delta.Text != "" {
			return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: ev.Delta.Text}}
		}
	case "thinking_delta":
		if ev.Delta.Thinking != "" {
			return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: ev.Delta.Thinking}, Thought: true}
		}
	}
	return nil
}
