package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
)

// spendApps prices one offline model (2 per million input tokens, 10 per
// million output tokens, in USD) and leaves the other unpriced.
const spendApps = `models:
  - {name: priced, provider: offline, price: {input: 2, output: 10}}
  - {name: free, provider: offline}
apps:
  - name: shop
    root_agent: { name: a, llm: { model: priced } }
  - name: lab
    root_agent: { name: b, llm: { model: free } }
`

// TestServeSpendMetrics serves with --metrics-addr, runs an app on a
// priced model and one on an unpriced one, and scrapes /metrics: tokens
// by kind, cost and calls equal what the runs' stored events say, the
// cost equals tokens × prices to the micro-unit, the unpriced calls have
// no cost, and no series is labelled by user or session.
func TestServeSpendMetrics(t *testing.T) {
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(config, []byte(spendApps), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, exited, logs := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "db"), "--config", config, "--metrics-addr", "127.0.0.1:0")
	m := metricsLine.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no metrics address logged:\n%s", logs)
	}
	conn := dial(t, addr)
	rc, sc := servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn)
	for _, app := range []string{"shop", "lab"} {
		createSession(t, sc, app, "s")
		for _, msg := range []string{"hello there", "and a longer question, with more words in it"} {
			runToEnd(t, rc, &servicev1.RunRequest{AppName: app, UserId: "u", SessionId: "s", NewMessage: userText(msg)})
		}
	}
	text := scrape(t, "http://"+m[1]+"/metrics")

	shop := storedSpend(t, sc, "shop")
	if shop.calls == 0 || shop.prompt == 0 || shop.candidates == 0 {
		t.Fatalf("the priced runs stored no usage: %+v", shop)
	}
	// 2 per million is 2 micro-units a token; 10 per million, 10.
	if want := 2*shop.prompt + 10*shop.candidates; shop.micros != want {
		t.Fatalf("the events' costs add up to %d micro-units; tokens × prices are %d", shop.micros, want)
	}
	lab := storedSpend(t, sc, "lab")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   int64
	}{
		{"agentrunner_model_tokens_total", map[string]string{"app": "shop", "model": "priced", "kind": "prompt"}, shop.prompt},
		{"agentrunner_model_tokens_total", map[string]string{"app": "shop", "model": "priced", "kind": "candidates"}, shop.candidates},
		{"agentrunner_model_cost_micros_total", map[string]string{"app": "shop", "model": "priced", "currency": "USD"}, shop.micros},
		{"agentrunner_model_calls_total", map[string]string{"app": "shop", "model": "priced", "priced": "true"}, shop.calls},
		{"agentrunner_model_calls_total", map[string]string{"app": "shop", "priced": "false"}, 0},
		{"agentrunner_model_tokens_total", map[string]string{"app": "lab", "model": "free", "kind": "prompt"}, lab.prompt},
		{"agentrunner_model_calls_total", map[string]string{"app": "lab", "model": "free", "priced": "false"}, lab.calls},
		{"agentrunner_model_calls_total", map[string]string{"app": "lab", "priced": "true"}, 0},
		{"agentrunner_model_cost_micros_total", map[string]string{"app": "lab"}, 0},
	} {
		if got := promSum(text, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %d, want %d\n%s", c.name, c.labels, got, c.want, grepLines(text, "agentrunner_model_"))
		}
	}
	if lab.calls == 0 {
		t.Errorf("the unpriced runs stored no usage")
	}
	if re := regexp.MustCompile(`(?m)^agentrunner_model_\S*\{[^}]*(user|session)`); re.MatchString(text) {
		t.Errorf("a spend series is labelled by user or session:\n%s", grepLines(text, "agentrunner_model_"))
	}
	cancel()
	if err := <-exited; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// spendOf is what an app's stored events say its model calls used.
type spendOf struct{ calls, prompt, candidates, micros int64 }

// storedSpend sums the usage and cost of the events of app's session "s"
// of user "u", read through the API.
func storedSpend(t *testing.T, sc servicev1.SessionServiceClient, app string) spendOf {
	t.Helper()
	resp, err := sc.ListEvents(t.Context(), &servicev1.ListEventsRequest{AppName: app, UserId: "u", SessionId: "s", PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetNextPageToken() != "" {
		t.Fatal("more events than one page")
	}
	var s spendOf
	for _, ev := range resp.GetEvents() {
		u := ev.GetUsageMetadata()
		if u == nil {
			continue
		}
		if u.GetThoughtsTokenCount() != 0 || u.GetCachedContentTokenCount() != 0 || u.GetCacheCreationTokenCount() != 0 || u.GetToolUsePromptTokenCount() != 0 {
			t.Fatalf("the offline model reported tokens this test does not price: %v", u)
		}
		s.calls++
		s.prompt += int64(u.GetPromptTokenCount())
		s.candidates += int64(u.GetCandidatesTokenCount())
		s.micros += ev.GetCost().GetMicros()
	}
	return s
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(body)
}

var promSample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
var promLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// promSum adds up the samples of the metric name whose labels include
// every one of labels, in Prometheus's text format; 0 when none does.
func promSum(text, name string, labels map[string]string) int64 {
	var sum int64
	for _, line := range strings.Split(text, "\n") {
		m := promSample.FindStringSubmatch(line)
		if m == nil || m[1] != name {
			continue
		}
		have := map[string]string{}
		for _, l := range promLabel.FindAllStringSubmatch(m[2], -1) {
			have[l[1]] = l[2]
		}
		match := true
		for k, v := range labels {
			match = match && have[k] == v
		}
		if v, err := strconv.ParseFloat(m[3], 64); match && err == nil {
			sum += int64(v)
		}
	}
	return sum
}

// TestSpendMeterBounded: models a provider names at will stop adding
// attribute sets past maxSpendSets; the others share the model "other".
func TestSpendMeterBounded(t *testing.T) {
	s, err := newSpendMeter(metricnoop.NewMeterProvider())
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxSpendSets + 500 {
		s.attrs(spendAttrs{"app", fmt.Sprintf("model-%d", i), "priced", "false"})
	}
	n := 0
	s.sets.Range(func(k, _ any) bool {
		n++
		return true
	})
	if n > maxSpendSets+1 {
		t.Fatalf("%d attribute sets kept, want at most %d", n, maxSpendSets+1)
	}
	if _, ok := s.sets.Load(spendAttrs{"app", "other", "priced", "false"}); !ok {
		t.Fatal(`no "other" model past the bound`)
	}
}
