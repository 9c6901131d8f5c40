package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/runner/plugin/telemetry"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
)

// telemetrySetup is what tracing (OTLP) and metrics (--metrics-addr) add to
// serve: the telemetry plugin (and, with metrics, the spend meter),
// otelgrpc's server stats handler (a span and metrics per RPC, the runs'
// spans under them), the store's commit hook,
// and what to flush and stop at shutdown. With neither, it is empty and
// costs nothing.
type telemetrySetup struct {
	plugins  []plugin.Plugin
	options  []grpc.ServerOption
	onCommit func(d time.Duration, writes int)
	// onWebhook counts webhook attempts; nil without metrics.
	onWebhook func(outcome string)
	shutdown  func(context.Context) error
}

// setupTelemetry reads the environment (see setupTracing) and, when
// metricsAddr is set, serves Prometheus metrics there.
func setupTelemetry(ctx context.Context, log *slog.Logger, metricsAddr, dataPath string) (telemetrySetup, error) {
	none := telemetrySetup{shutdown: func(context.Context) error { return nil }}
	tp, capture, err := setupTracing(ctx, log)
	if err != nil {
		return none, err
	}
	m, reg, err := setupMetrics(ctx, dataPath, metricsAddr != "")
	if err != nil {
		return none, err
	}
	stopMetrics := func() {}
	if reg != nil {
		if stopMetrics, err = serveMetrics(metricsAddr, reg, log); err != nil {
			return none, err
		}
	}
	if tp == nil && m == nil {
		return none, nil
	}
	cfg := telemetry.Config{CaptureContent: capture}
	var grpcOpts []otelgrpc.Option
	var shutdowns []func(context.Context) error
	if tp != nil {
		cfg.TracerProvider = tp
		grpcOpts = append(grpcOpts, otelgrpc.WithTracerProvider(tp))
		shutdowns = append(shutdowns, tp.Shutdown)
	} else {
		grpcOpts = append(grpcOpts, otelgrpc.WithTracerProvider(tracenoop.NewTracerProvider()))
	}
	setup := telemetrySetup{}
	if m != nil {
		cfg.MeterProvider = m.provider
		grpcOpts = append(grpcOpts, otelgrpc.WithMeterProvider(m.provider))
		shutdowns = append(shutdowns, m.provider.Shutdown)
		setup.onCommit = m.onCommit
		setup.onWebhook = m.onWebhook
	} else {
		grpcOpts = append(grpcOpts, otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()))
	}
	p, err := telemetry.New(cfg)
	if err != nil {
		stopMetrics()
		return none, err
	}
	setup.plugins = []plugin.Plugin{p}
	if m != nil {
		sm, err := newSpendMeter(m.provider)
		if err != nil {
			stopMetrics()
			return none, err
		}
		setup.plugins = append(setup.plugins, sm)
	}
	setup.options = []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(grpcOpts...))}
	setup.shutdown = func(ctx context.Context) error {
		defer stopMetrics()
		var errs []error
		for _, f := range shutdowns {
			errs = append(errs, f(ctx))
		}
		return errors.Join(errs...)
	}
	return setup, nil
}

// setupTracing exports traces over OTLP when the standard environment asks
// for it (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
// OTEL_EXPORTER_OTLP_PROTOCOL "grpc" or the default "http/protobuf"; the
// exporters read the rest: headers, timeout, TLS). Without them it returns
// a nil provider. OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true
// records message content on the spans.
func setupTracing(ctx context.Context, log *slog.Logger) (*sdktrace.TracerProvider, bool, error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, false, nil
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
		return nil, false, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: want grpc or http/protobuf", protocol)
	}
	if err != nil {
		return nil, false, fmt.Errorf("otlp trace exporter: %w", err)
	}
	res := resource.NewSchemaless(semconv.ServiceName("agentrunner"), semconv.ServiceVersion(buildVersion()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	capture := strings.EqualFold(os.Getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"), "true")
	log.Info("exporting traces over OTLP", "protocol", cmpOr(protocol, "http/protobuf"), "capture_content", capture)
	return tp, capture, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
