package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Store metric names.
const (
	metricCommitDuration = "agentrunner.store.commit.duration"
	metricCommitWrites   = "agentrunner.store.commit.writes"
	metricDataFileSize   = "agentrunner.store.file.size"
	// metricWebhookAttempts counts webhook attempts by outcome
	// (delivered, retry, failed).
	metricWebhookAttempts = "agentrunner.webhook.attempts"
)

// metrics is --metrics-addr: a meter provider whose readings are served
// in the Prometheus text format at /metrics, and the store's instruments.
type metrics struct {
	provider  *sdkmetric.MeterProvider
	onCommit  func(d time.Duration, writes int)
	onWebhook func(outcome string)
}

// setupMetrics makes the meter provider, read by Prometheus (the returned
// registry, when prom is set) and exported over OTLP (when the standard
// environment asks for it), and the store's instruments, the data file's
// size among them. It returns nil when neither reads metrics.
func setupMetrics(ctx context.Context, dataPath string, prom bool) (*metrics, *prometheus.Registry, error) {
	var opts []sdkmetric.Option
	var reg *prometheus.Registry
	if prom {
		reg = prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			return nil, nil, fmt.Errorf("prometheus exporter: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(exp))
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "" {
		exp, err := otlpMetricExporter(ctx)
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	if len(opts) == 0 {
		return nil, nil, nil
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	m := mp.Meter("github.com/agentrunner/agentrunner/store")
	commits, err1 := m.Float64Histogram(metricCommitDuration, metric.WithDescription("How long store commits take, fsync included."), metric.WithUnit("s"))
	writes, err2 := m.Int64Histogram(metricCommitWrites, metric.WithDescription("Writes per store commit (shared fsyncs)."), metric.WithUnit("{write}"))
	_, err3 := m.Int64ObservableGauge(metricDataFileSize, metric.WithDescription("Size of the data file."), metric.WithUnit("By"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			if fi, err := os.Stat(dataPath); err == nil {
				o.Observe(fi.Size())
			}
			return nil
		}))
	hooks, err4 := m.Int64Counter(metricWebhookAttempts, metric.WithDescription("Webhook attempts by outcome: delivered, retry (failed, tried again later), failed (given up)."), metric.WithUnit("{attempt}"))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, nil, fmt.Errorf("store instruments: %w", err)
	}
	return &metrics{
		provider: mp,
		onCommit: func(d time.Duration, n int) {
			ctx := context.Background()
			commits.Record(ctx, d.Seconds())
			writes.Record(ctx, int64(n))
		},
		onWebhook: func(outcome string) {
			hooks.Add(context.Background(), 1, metric.WithAttributes(attribute.String("outcome", outcome)))
		},
	}, reg, nil
}

// serveMetrics serves /metrics on addr until stop is called.
func serveMetrics(addr string, reg *prometheus.Registry, log *slog.Logger) (stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(lis) }()
	log.Info("metrics server", "addr", lis.Addr().String())
	return func() { _ = hs.Close() }, nil
}

// otlpMetricExporter exports metrics over OTLP, with the protocol the
// environment names (grpc, or the default http/protobuf).
func otlpMetricExporter(ctx context.Context) (sdkmetric.Exporter, error) {
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdkmetric.Exporter
	var err error
	switch protocol {
	case "grpc":
		exp, err = otlpmetricgrpc.New(ctx)
	case "", "http/protobuf":
		exp, err = otlpmetrichttp.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: want grpc or http/protobuf", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp metric exporter: %w", err)
	}
	return exp, nil
}
