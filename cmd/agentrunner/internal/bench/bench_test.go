package bench

import (
	"strings"
	"testing"
	"time"
)

func TestMeasureFsync(t *testing.T) {
	l, err := measureFsync(t.Context(), t.TempDir(), 3*4096, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if l.SyncsPerSec <= 0 || l.BytesPerSync != 3*4096 {
		t.Fatalf("limit = %+v", l)
	}
}

func TestMeasureStream(t *testing.T) {
	msg := samplePartial()
	l, err := measureStream(t.Context(), msg, 4, 500)
	if err != nil {
		t.Fatal(err)
	}
	if l.MsgsPerSec <= 0 || l.Streams != 4 || l.MessageBytes < 50 {
		t.Fatalf("limit = %+v", l)
	}
}

func TestPercentiles(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	p := percentiles(d)
	if p.P50 != 51 || p.P95 != 96 || p.P99 != 100 {
		t.Fatalf("percentiles = %+v", p)
	}
	if (percentiles(nil) != Pcts{}) {
		t.Fatal("empty input")
	}
}

func TestIntList(t *testing.T) {
	got, err := intList("1, 16,100_000")
	if err != nil || len(got) != 3 || got[2] != 100000 {
		t.Fatalf("intList = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,,2", "x", "-3"} {
		if _, err := intList(bad); err == nil {
			t.Errorf("intList(%q) accepted", bad)
		}
	}
}

func TestComputeRatios(t *testing.T) {
	rep := &Report{Ratios: map[string]Target{}}
	rep.Limits.FsyncSingle.SyncsPerSec = 1000 // 2 ms for two syncs
	rep.Limits.FsyncBatch.SyncsPerSec = 100
	rep.Limits.BatchEvents = 256
	rep.Limits.Stream.MsgsPerSec = 100000
	rep.Results = []Result{
		{Name: "single", Sessions: 1, Streaming: "none", LatencyMs: Pcts{P50: 2.4}},
		{Name: "256", Sessions: 256, Streaming: "mixed", PersistedPerSec: 10000},
		{Name: "sse", Sessions: 16, Streaming: "sse", PartialPerSec: 60000},
		{Name: "len10", Sessions: 1, SessionLen: 10, LatencyMs: Pcts{P50: 2}, File: &FileStats{EventBytesPerEvent: 500}},
		{Name: "len100k", Sessions: 1, SessionLen: 100000, LatencyMs: Pcts{P50: 3}, File: &FileStats{EventBytesPerEvent: 520}},
	}
	computeRatios(rep, Options{Limits: true})
	want := map[string]bool{
		"single_session_p50_vs_2commits_plus_0.5ms":              true,  // 2.4 <= 2.5
		"persisted_events_per_sec_256_sessions_vs_batched_fsync": false, // 10000 < 0.6*25600
		"partial_events_per_sec_vs_loopback_stream":              true,
		"p50_latency_len_100000_vs_len_10":                       false, // 3 > 2.4
		"event_bytes_len_100000_vs_len_10":                       true,
	}
	for k, met := range want {
		got, ok := rep.Ratios[k]
		if !ok {
			t.Errorf("missing ratio %s (have %v)", k, keys(rep.Ratios))
			continue
		}
		if got.Met != met {
			t.Errorf("%s met = %v, want %v (%+v)", k, got.Met, met, got)
		}
	}
	var b strings.Builder
	printReport(&b, rep)
	if !strings.Contains(b.String(), "len100k") || !strings.Contains(b.String(), "NO") {
		t.Fatalf("report:\n%s", b.String())
	}
}

func keys(m map[string]Target) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestMedianRatio(t *testing.T) {
	// Rounds 2 and 3 are slow for both builds; the ratio of each round
	// cancels that, the ratio of the medians would not.
	got := medianRatio([]float64{90, 45, 46, 95}, []float64{100, 50, 50, 0})
	if got != 0.9 {
		t.Fatalf("medianRatio = %v, want 0.9 (rounds without a baseline figure left out)", got)
	}
	if medianRatio(nil, nil) != 0 || median([]float64{3, 1, 2}) != 2 || median([]float64{4, 1, 2, 3}) != 2.5 {
		t.Fatal("median")
	}
}
