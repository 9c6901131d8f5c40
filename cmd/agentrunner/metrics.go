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
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Store metric names.
const (
	metricCommitDuration = "agentrunner.store.commit.duration"
	metricCommitWrites   = "agentrunner.store.commit.writes"
	metricDataFileSize   = "agentrunner.store.file.size"
)

// metrics is --metrics-addr: a meter provider whose readings are served
// in the Prometheus text format at /metrics, and the store's instruments.
type metrics struct {
	provider *sdkmetric.MeterProvider
	onCommit func(d time.Duration, writes int)
}

// setupMetrics makes the meter provider and the store's instruments, the
// data file's size among them, read from the file when scraped.
func setupMetrics(dataPath string) (*metrics, *prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
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
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, nil, fmt.Errorf("store instruments: %w", err)
	}
	return &metrics{
		provider: mp,
		onCommit: func(d time.Duration, n int) {
			ctx := context.Background()
			commits.Record(ctx, d.Seconds())
			writes.Record(ctx, int64(n))
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
