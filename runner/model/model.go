// Package model defines the small interface the runner's LLM agents call a
// language model through, and the request and response shapes it takes.
// Implementations convert to and from their provider's types at their own
// boundary: each provider package (gemini, openai, anthropic) is the only
// code that imports its SDK. A failed call is classified as an *Error with
// a stable code (errors.go), which the retry package acts on.
//
// Imports: the generated messages only. It must not import anything else
// of agentrunner, nor gRPC (runner/deps_test.go checks).
package model

import (
	"context"
	"iter"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// Model generates content.
type Model interface {
	// Name returns the model name, for example "gemini-2.5-flash".
	Name() string
	// Generate calls the model. With stream false it yields exactly one
	// complete response. With stream true it yields partial responses
	// (Partial set, text as it arrives) followed by one complete response
	// that aggregates them. An error ends the sequence; ctx cancellation
	// aborts the call.
	Generate(ctx context.Context, req *Request, stream bool) iter.Seq2[*Response, error]
}

// Request is one model call.
type Request struct {
	// Model overrides the model name when not empty.
	Model string
	// SystemInstruction is the agent's instruction, already filled in.
	SystemInstruction string
	// Contents is the conversation, oldest first.
	Contents []*agentrunnerv1.Content
	// Tools the model may call.
	Tools []*FunctionDeclaration
	// Config holds generation parameters; nil means the model's defaults.
	Config *GenerateConfig
	// Cache, when set, asks a model that supports context caching (see
	// ContextCacher) to keep the stable start of the request in the
	// provider's cache. Other models ignore it. Shared: never changed.
	Cache *CacheConfig
}

// CacheConfig says how a model keeps request prefixes in its provider's
// context cache.
type CacheConfig struct {
	// Intervals is how many calls may use one cache before a new one
	// replaces it; 0 means 10.
	Intervals int
	// TTL is how long the provider keeps a cache; 0 means 30 minutes.
	TTL time.Duration
	// MinTokens: requests estimated below this many tokens are sent
	// whole; 0 means 1024.
	MinTokens int
}

// ContextCacher is a model that acts on Request.Cache.
type ContextCacher interface {
	// CachesContext reports whether the model uses Request.Cache.
	CachesContext() bool
}

// FunctionDeclaration declares a tool to the model.
type FunctionDeclaration struct {
	Name        string
	Description string
	// Parameters is a JSON schema object describing the arguments, as
	// decoded JSON (map[string]any); nil for a tool without arguments.
	Parameters map[string]any
	// Response is an optional JSON schema of the result.
	Response map[string]any
}

// GenerateConfig holds generation parameters. Nil pointers leave the
// model's default.
type GenerateConfig struct {
	Temperature      *float32
	TopP             *float32
	TopK             *float32
	MaxOutputTokens  int32
	StopSequences    []string
	CandidateCount   int32
	ResponseMIMEType string
	// ThinkingBudget limits thinking tokens when not nil.
	ThinkingBudget *int32
	// IncludeThoughts asks for thought summaries.
	IncludeThoughts bool
}

// Response is one answer, or one chunk of a streamed answer.
type Response struct {
	// Content is what the model produced; may be nil for an error.
	Content *agentrunnerv1.Content
	// Partial marks a streamed chunk that the final response supersedes.
	Partial bool
	// TurnComplete is set on the final response of a call.
	TurnComplete bool
	// FinishReason as reported by the model, for example "STOP",
	// "MAX_TOKENS" or "SAFETY".
	FinishReason string
	// ErrorCode and ErrorMessage report a failure the model returned in
	// band (a blocked prompt, a safety stop); the runner turns them into an
	// event.
	ErrorCode    string
	ErrorMessage string
	// Usage is the token usage of the call, on the final response.
	Usage *agentrunnerv1.UsageMetadata
	// Cost is what the call cost, set beside Usage by the wrapper that
	// knows the model's price (package retry); nil when nobody priced it.
	Cost *agentrunnerv1.Cost
	// ModelVersion reported by the model.
	ModelVersion string
	// Citations are the sources the answer quotes, when the model reports
	// them.
	Citations *agentrunnerv1.CitationMetadata
	// Grounding is how the answer was grounded, as the JSON of Gemini's
	// GroundingMetadata.
	Grounding *structpb.Struct
	// CustomMetadata is what an after_model callback or plugin attaches;
	// it is kept on the event.
	CustomMetadata *structpb.Struct
	// Interrupted marks a response cut off after part of it was streamed:
	// Content holds what arrived, ErrorCode why it stopped.
	Interrupted bool
	// Attempts, on the complete response of a call that was retried or
	// fell back (package retry), is each attempt's timing, the last the
	// one answering; nil when the first attempt answered. The LLM agent
	// puts them on the event's timing.
	Attempts []*agentrunnerv1.ModelAttempt
}
