package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/runner/plugin/telemetry"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"google.golang.org/grpc"
)

// tracing is what OTLP trace export adds to serve: the telemetry plugin,
// otelgrpc's server stats handler (a span per RPC, the runs' spans under
// them), and the provider to flush at shutdown.
type tracing struct {
	plugins  []plugin.Plugin
	options  []grpc.ServerOption
	shutdown func(context.Context) error
}

// setupTracing exports traces over OTLP when the standard environment asks
// for it (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
// OTEL_EXPORTER_OTLP_PROTOCOL "grpc" or the default "http/protobuf"; the
// exporters read the rest: headers, timeout, TLS). Without them it returns
// nothing to install, so tracing costs nothing.
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true records message
// content on the spans.
func setupTracing(ctx context.Context, log *slog.Logger) (tracing, error) {
	none := tracing{shutdown: func(context.Context) error { return nil }}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return none, nil
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	switch protocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	default:
		return none, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: want grpc or http/protobuf", protocol)
	}
	if err != nil {
		return none, fmt.Errorf("otlp trace exporter: %w", err)
	}
	res := resource.NewSchemaless(semconv.ServiceName("agentrunner"), semconv.ServiceVersion(buildVersion()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	capture := strings.EqualFold(os.Getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"), "true")
	log.Info("exporting traces over OTLP", "protocol", cmpOr(protocol, "http/protobuf"), "capture_content", capture)
	return tracing{
		plugins:  []plugin.Plugin{telemetry.New(telemetry.Config{TracerProvider: tp, CaptureContent: capture})},
		options:  []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp)))},
		shutdown: tp.Shutdown,
	}, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
