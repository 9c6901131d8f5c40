// Package telemetry is the plugin that traces and measures runs with
// OpenTelemetry,
// following the GenAI semantic conventions (semconv v1.40.0): a span per
// run (its run and session ids), inside it invoke_agent per agent turn,
// chat per model call (provider, request and response model, finish
// reasons, input and output tokens) and execute_tool per tool call (tool
// name, call id, type). The run's span is a child of whatever span the
// run's context carries (the RPC's, with otelgrpc). Message content is
// recorded only when asked (CaptureContent).
//
// Give it a TracerProvider; without one (no exporter configured) do not
// install the plugin at all, and tracing costs nothing.
//
// Imports: agent, model, tool, the OpenTelemetry API. It must not import
// the runner, agent implementations or gRPC (runner/deps_test.go checks).
package telemetry

import (
	"context"
	"fmt"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/protobuf/encoding/protojson"
)

// Name is the plugin's name.
const Name = "telemetry"

// Attribute keys of agentrunner's own.
const (
	RunIDKey = attribute.Key("agentrunner.run.id")
	AppKey   = attribute.Key("agentrunner.app")
)

// Config configures the plugin. At least one provider is needed.
type Config struct {
	// TracerProvider makes the tracer; nil records no spans.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments (runs started and ended by
	// status, their duration, runs in progress, model call duration and
	// token usage, tool calls by outcome); nil records no metrics.
	MeterProvider metric.MeterProvider
	// CaptureContent records the messages sent to and received from models
	// and tools (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT).
	CaptureContent bool
}

// Plugin traces and measures runs. It is safe for concurrent use.
type Plugin struct {
	tracer  trace.Tracer
	meters  *meters // nil: no metrics
	capture bool

	spans *runIndex[trace.Span] // by spanKey
	turns *turns                // open agent turns, for nesting
}

// New returns the telemetry plugin.
func New(cfg Config) (*Plugin, error) {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	p := &Plugin{
		tracer:  tp.Tracer("github.com/agentrunner/agentrunner/runner"),
		capture: cfg.CaptureContent,
		spans:   newRunIndex[trace.Span](),
		turns:   newTurns(),
	}
	if cfg.MeterProvider != nil {
		m, err := newMeters(cfg.MeterProvider)
		if err != nil {
			return nil, fmt.Errorf("telemetry instruments: %w", err)
		}
		p.meters = m
	}
	return p, nil
}

func (p *Plugin) Name() string { return Name }

// ObservesRequestsOnly marks the plugin a plugin.RequestObserver: it
// reads model requests and never changes them, so the LLM agent need not
// copy a request's history for it.
func (p *Plugin) ObservesRequestsOnly() {}

// spanKey names an open span: of a run, of an agent turn, of a model or
// tool call.
func spanKey(ctx agent.ReadonlyContext, kind, id string) string {
	return strings.Join([]string{ctx.InvocationID(), ctx.Branch(), ctx.AgentName(), kind, id}, "\x00")
}

func runKey(ctx agent.ReadonlyContext) string { return ctx.InvocationID() }

func (p *Plugin) open(key string, span trace.Span) { p.spans.put(key, span) }

func (p *Plugin) take(key string) trace.Span {
	s, _ := p.spans.take(key)
	return s
}

// takeRest removes and returns the open spans of a run but its own.
func (p *Plugin) takeRest(run string) []trace.Span {
	s, ok := p.spans.take(run)
	rest := p.spans.drop(run)
	if ok {
		p.spans.put(run, s) // the run's own span stays for AfterRun to end
	}
	return rest
}

func (p *Plugin) peek(key string) trace.Span {
	s, _ := p.spans.get(key)
	return s
}

// under returns ctx carrying the span of key as the parent of new spans:
// hooks cannot hand a context to the next step, so the plugin keeps the
// open spans itself.
func (p *Plugin) under(ctx context.Context, key string) context.Context {
	if s := p.peek(key); s != nil {
		return trace.ContextWithSpan(ctx, s)
	}
	return ctx
}

func (p *Plugin) BeforeRun(ctx agent.InvocationContext) (*agentrunnerv1.Content, error) {
	_, span := p.tracer.Start(ctx, "invoke_agent "+ctx.AppName(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(ctx.AgentName()),
		semconv.GenAIConversationID(ctx.SessionID()),
		RunIDKey.String(ctx.InvocationID()),
		AppKey.String(ctx.AppName()),
	))
	p.open(runKey(ctx), span)
	if p.meters != nil {
		p.meters.runStarted(ctx)
	}
	return nil, nil
}

func (p *Plugin) AfterRun(ctx agent.InvocationContext, err error) {
	// Spans whose closing hook never came (a turn cut short, a call the
	// run left waiting) end with the run.
	for _, s := range p.takeRest(runKey(ctx)) {
		s.End()
	}
	for _, s := range p.turns.drop(runKey(ctx)) {
		s.End() // an outer turn of an agent that ran again in it; no-op if ended
	}
	if p.meters != nil {
		p.meters.runEnded(ctx, err)
	}
	span := p.take(runKey(ctx))
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (p *Plugin) BeforeAgent(ctx agent.CallbackContext) (*agentrunnerv1.Content, error) {
	parent := p.under(ctx, runKey(ctx))
	if c := p.turns.caller(runKey(ctx), ctx.Branch()); c != nil {
		parent = trace.ContextWithSpan(ctx, c)
	}
	_, span := p.tracer.Start(parent, "invoke_agent "+ctx.AgentName(), trace.WithAttributes(
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(ctx.AgentName()),
		semconv.GenAIConversationID(ctx.SessionID()),
	))
	p.open(spanKey(ctx, "agent", ""), p.turns.push(runKey(ctx), ctx.Branch(), ctx.AgentName(), span))
	return nil, nil
}

func (p *Plugin) AfterAgent(ctx agent.CallbackContext) (*agentrunnerv1.Content, error) {
	if span := p.take(spanKey(ctx, "agent", "")); span != nil {
		if outer := p.turns.pop(runKey(ctx), ctx.Branch(), ctx.AgentName(), span); outer != nil {
			p.open(spanKey(ctx, "agent", ""), outer) // the agent's outer turn goes on
		}
		span.End()
	}
	return nil, nil
}

// provider names the provider behind a model, as the conventions spell it.
func provider(modelName string) attribute.KeyValue {
	if strings.HasPrefix(modelName, "offline") {
		return semconv.GenAIProviderNameKey.String("agentrunner.offline")
	}
	return semconv.GenAIProviderNameGCPGemini
}

func (p *Plugin) BeforeModel(ctx agent.CallbackContext, req *model.Request) (*model.Response, error) {
	_, span := p.tracer.Start(p.under(ctx, spanKey(ctx, "agent", "")), "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		semconv.GenAIOperationNameChat,
		provider(req.Model),
		semconv.GenAIRequestModel(req.Model),
	))
	if p.capture {
		span.SetAttributes(attribute.String("gen_ai.input.messages", contentsJSON(req.Contents)))
	}
	p.open(spanKey(ctx, "model", ""), span)
	if p.meters != nil {
		p.meters.start(spanKey(ctx, "model", ""), req.Model)
	}
	return nil, nil
}

func (p *Plugin) AfterModel(ctx agent.CallbackContext, resp *model.Response) (*model.Response, error) {
	if p.meters != nil {
		p.meters.modelCallEnded(ctx, spanKey(ctx, "model", ""), resp.Usage.GetPromptTokenCount(), resp.Usage.GetCandidatesTokenCount(), nil)
	}
	span := p.take(spanKey(ctx, "model", ""))
	if span == nil {
		return nil, nil
	}
	span.SetAttributes(
		semconv.GenAIResponseModel(resp.ModelVersion),
		semconv.GenAIUsageInputTokens(int(resp.Usage.GetPromptTokenCount())),
		semconv.GenAIUsageOutputTokens(int(resp.Usage.GetCandidatesTokenCount())),
	)
	if resp.FinishReason != "" {
		span.SetAttributes(semconv.GenAIResponseFinishReasons(strings.ToLower(resp.FinishReason)))
	}
	if p.capture {
		span.SetAttributes(attribute.String("gen_ai.output.messages", contentsJSON([]*agentrunnerv1.Content{resp.Content})))
	}
	span.End()
	return nil, nil
}

func (p *Plugin) OnModelError(ctx agent.CallbackContext, _ *model.Request, err error) (*model.Response, error) {
	if p.meters != nil {
		p.meters.modelCallEnded(ctx, spanKey(ctx, "model", ""), 0, 0, err)
	}
	if span := p.take(spanKey(ctx, "model", "")); span != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.End()
	}
	return nil, nil
}

// toolType is the gen_ai.tool.type of a tool.
func toolType(t tool.Tool) string {
	if tool.KindOf(t) == agentrunnerv1.ToolKind_TOOL_KIND_MCP {
		return "extension"
	}
	return "function"
}

func (p *Plugin) BeforeTool(ctx tool.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
	_, span := p.tracer.Start(p.under(ctx, spanKey(ctx, "agent", "")), "execute_tool "+t.Name(), trace.WithAttributes(
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(t.Name()),
		semconv.GenAIToolCallID(ctx.FunctionCallID()),
		semconv.GenAIToolType(toolType(t)),
	))
	p.open(spanKey(ctx, "tool", ctx.FunctionCallID()), span)
	return nil, nil
}

func (p *Plugin) AfterTool(ctx tool.Context, t tool.Tool, _, _ map[string]any) (map[string]any, error) {
	if p.meters != nil {
		p.meters.toolCallEnded(ctx, t.Name(), "ok")
	}
	if span := p.take(spanKey(ctx, "tool", ctx.FunctionCallID())); span != nil {
		span.End()
	}
	return nil, nil
}

func (p *Plugin) OnToolError(ctx tool.Context, t tool.Tool, _ map[string]any, err error) (map[string]any, error) {
	if p.meters != nil {
		p.meters.toolCallEnded(ctx, t.Name(), "error")
	}
	if span := p.take(spanKey(ctx, "tool", ctx.FunctionCallID())); span != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.End()
	}
	return nil, nil
}

// contentsJSON renders contents for a span, when content is captured.
func contentsJSON(cs []*agentrunnerv1.Content) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		b, err := protojson.Marshal(c)
		if err == nil {
			parts = append(parts, string(b))
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}
