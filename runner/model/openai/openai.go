// Package openai implements model.Model on the OpenAI Chat Completions API
// through github.com/openai/openai-go/v3. It is the only package in
// agentrunner that imports that SDK: requests and responses are converted
// between agentrunner.v1 messages and the SDK's types here, and nowhere
// else.
//
// Chat Completions is spoken by more than OpenAI: Azure OpenAI, Ollama,
// vLLM and LiteLLM serve it too, so the base URL is part of the Config. The
// SDK's own environment (OPENAI_API_KEY, OPENAI_BASE_URL) is not read: the
// key and the URL come from the Config alone, so that what the app config
// says is what is called.
//
// The SDK's own retries are off: a failed call is returned at once,
// classified as a *model.Error, and retrying is the retry package's job
// (one policy, logged, the same for every provider).
//
// Imports: model, the generated messages and the SDK. It must not import
// the runner, agents, tools, plugins, store or gRPC directly
// (runner/deps_test.go checks).
package openai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// DefaultBaseURL is OpenAI's own API.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Config configures a Model.
type Config struct {
	// Model is the model id, for example "gpt-4o". Required.
	Model string
	// APIKey is sent as a bearer token. Servers that take none (a local
	// Ollama) accept any value, so an empty key is sent as none.
	APIKey string
	// BaseURL is where the API is, for example
	// "http://127.0.0.1:11434/v1/" for Ollama; empty means DefaultBaseURL.
	BaseURL string
	// HTTPClient makes the requests; nil means a client of its own.
	HTTPClient *http.Client
	// IdleTimeout bounds the silence of a response once its headers have
	// arrived (see model.IdleTimeout); zero means none. The HTTPClient is
	// not changed: the model uses a copy with the bound on its transport.
	IdleTimeout time.Duration
	// LegacyMaxTokens sends the output token limit as max_tokens instead
	// of max_completion_tokens, for servers that only know the old name.
	LegacyMaxTokens bool
	// Options are further SDK request options, for example headers an
	// Azure deployment needs. They come last and win.
	Options []option.RequestOption
}

// Model is an OpenAI-compatible chat model. It is safe for concurrent use.
type Model struct {
	chat            openai.ChatCompletionService
	name            string
	legacyMaxTokens bool
}

var _ model.Model = (*Model)(nil)

// New returns the model cfg describes. It makes no request.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: empty model name")
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
	// The chat service alone, not openai.NewClient: the client would add
	// the OPENAI_* environment, which must not override the config.
	return &Model{chat: openai.NewChatCompletionService(opts...), name: cfg.Model, legacyMaxTokens: cfg.LegacyMaxTokens}, nil
}

// Name returns the model id.
func (m *Model) Name() string { return m.name }

// Generate calls the model; see model.Model.
//
// With stream true, each chunk's answer text is yielded as a partial
// Response; tool calls appear only in the complete Response that ends the
// sequence, their arguments whole, so a consumer never acts on half a call.
func (m *Model) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if req == nil {
			yield(nil, errors.New("openai: nil request"))
			return
		}
		name := m.name
		if req.Model != "" {
			name = req.Model
		}
		params, err := m.toParams(name, req, stream)
		if err != nil {
			yield(nil, &model.Error{Code: model.CodeInvalidArgument, Err: fmt.Errorf("openai model %q: %w", name, err)})
			return
		}
		if stream {
			m.generateStream(ctx, name, params, yield)
			return
		}
		m.generate(ctx, name, params, yield)
	}
}

func (m *Model) generate(ctx context.Context, name string, params openai.ChatCompletionNewParams, yield func(*model.Response, error) bool) {
	var httpResp *http.Response
	c, err := m.chat.New(ctx, params, option.WithResponseInto(&httpResp))
	if err != nil {
		yield(nil, wrapError(ctx, name, httpResp, err))
		return
	}
	var acc accumulator
	acc.addCompletion(c)
	resp, err := acc.response()
	if err != nil {
		yield(nil, fmt.Errorf("openai model %q: %w", name, err))
		return
	}
	yield(resp, nil)
}

func (m *Model) generateStream(ctx context.Context, name string, params openai.ChatCompletionNewParams, yield func(*model.Response, error) bool) {
	var httpResp *http.Response
	s := m.chat.NewStreaming(ctx, params, option.WithResponseInto(&httpResp))
	defer s.Close()
	var acc accumulator
	for s.Next() {
		chunk := s.Current()
		if text := acc.addChunk(&chunk); text != "" {
			partial := &model.Response{
				Content:      &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{textPart(text)}},
				Partial:      true,
				ModelVersion: chunk.Model,
			}
			if !yield(partial, nil) {
				return
			}
		}
	}
	// A cut call's usage, when its chunk came before the cut (it is the
	// last one, sent after the finish reason), counts it.
	if err := s.Err(); err != nil {
		yield(nil, model.WithUsage(wrapError(ctx, name, httpResp, err), acc.usageSoFar()))
		return
	}
	// A stream that ends, without an error, before the model said why it
	// stopped was cut short (a proxy closing it, the server going away
	// between events): the chunks so far are not the whole answer.
	if err := ctx.Err(); err != nil {
		yield(nil, model.WithUsage(fmt.Errorf("openai model %q: %w", name, err), acc.usageSoFar()))
		return
	}
	if acc.finish == "" {
		yield(nil, model.WithUsage(fmt.Errorf("openai model %q: %w", name, model.Unavailable("the stream ended before the answer was complete")), acc.usageSoFar()))
		return
	}
	resp, err := acc.response()
	if err != nil {
		yield(nil, fmt.Errorf("openai model %q: %w", name, err))
		return
	}
	yield(resp, nil)
}
