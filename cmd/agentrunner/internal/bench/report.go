package bench

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// computeRatios sets each target of issue 6 against its measured limit.
func computeRatios(rep *Report, o Options) {
	find := func(pred func(r Result) bool) *Result {
		for i := range rep.Results {
			if pred(rep.Results[i]) {
				return &rep.Results[i]
			}
		}
		return nil
	}
	if o.Limits {
		l := rep.Limits
		// A lone session's run commits twice (user event, answer): the
		// floor is two durable commits, plus half a millisecond of our own
		// work.
		if r := find(func(r Result) bool { return r.Sessions == 1 && r.SessionLen == 0 }); r != nil && l.FsyncSingle.SyncsPerSec > 0 {
			limit := 2000/l.FsyncSingle.SyncsPerSec + 0.5
			rep.Ratios["single_session_p50_vs_2commits_plus_0.5ms"] = target(r.LatencyMs.P50, limit, "<= 1.0", r.LatencyMs.P50 <= limit)
		}
		if r := find(func(r Result) bool {
			return r.Sessions == rep.Limits.BatchEvents && r.Streaming == "mixed" && r.Stored == 0
		}); r != nil && l.FsyncBatch.SyncsPerSec > 0 {
			limit := l.FsyncBatch.SyncsPerSec * float64(rep.Limits.BatchEvents)
			rep.Ratios[fmt.Sprintf("persisted_events_per_sec_%d_sessions_vs_batched_fsync", r.Sessions)] = target(r.PersistedPerSec, limit, ">= 0.6", r.PersistedPerSec >= 0.6*limit)
		}
		if r := find(func(r Result) bool { return r.Streaming == "sse" }); r != nil && l.Stream.MsgsPerSec > 0 {
			rep.Ratios["partial_events_per_sec_vs_loopback_stream"] = target(r.PartialPerSec, l.Stream.MsgsPerSec, ">= 0.5", r.PartialPerSec >= 0.5*l.Stream.MsgsPerSec)
		}
	}
	var short, long *Result
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.SessionLen == 0 {
			continue
		}
		if short == nil || r.SessionLen < short.SessionLen {
			short = r
		}
		if long == nil || r.SessionLen > long.SessionLen {
			long = r
		}
	}
	if short != nil && long != nil && short != long {
		key := fmt.Sprintf("p50_latency_len_%d_vs_len_%d", long.SessionLen, short.SessionLen)
		rep.Ratios[key] = target(long.LatencyMs.P50, short.LatencyMs.P50, "<= 1.2", long.LatencyMs.P50 <= 1.2*short.LatencyMs.P50)
		if short.File != nil && long.File != nil && short.File.EventBytesPerEvent > 0 {
			key := fmt.Sprintf("event_bytes_len_%d_vs_len_%d", long.SessionLen, short.SessionLen)
			rep.Ratios[key] = target(long.File.EventBytesPerEvent, short.File.EventBytesPerEvent, "<= 1.2", long.File.EventBytesPerEvent <= 1.2*short.File.EventBytesPerEvent)
		}
	}
	if r := find(func(r Result) bool { return r.Stored > 0 }); r != nil && r.PeakRSSMiB > 0 {
		rep.Ratios[fmt.Sprintf("peak_rss_mib_with_%d_sessions_vs_100", r.Stored)] = target(r.PeakRSSMiB, 100, "< 1.0", r.PeakRSSMiB < 100)
	}
}

func target(fig, limit float64, goal string, met bool) Target {
	t := Target{Figure: fig, Limit: limit, Goal: goal, Met: met}
	if limit != 0 {
		t.Ratio = fig / limit
	}
	return t
}

func printReport(w io.Writer, rep *Report) {
	switch {
	case rep.Replicas > 1:
		fmt.Fprintf(w, "store: %s, %d replicas (sessions spread round-robin; cpu ms/run summed over them, rss the largest)\n", rep.Store, rep.Replicas)
	case rep.Store != "":
		fmt.Fprintf(w, "store: %s\n", rep.Store)
	}
	if len(rep.Results) > 0 {
		printResults(w, rep.Results)
	}
	printInflight(w, rep.InFlight)
	l := rep.Limits
	if l.FsyncSingle.SyncsPerSec > 0 {
		fmt.Fprintf(w, "\nlimits: durable commits (pages, fdatasync, meta page, fdatasync) %.0f/s with %d B each (%.0f fdatasync/s); %.0f/s with %d B each (a batch of %d events); loopback gRPC %.0f msg/s (%d B messages, %d streams)\n",
			l.FsyncSingle.SyncsPerSec, l.FsyncSingle.BytesPerSync, l.FsyncSingle.RawSyncsPerSec, l.FsyncBatch.SyncsPerSec, l.FsyncBatch.BytesPerSync, l.BatchEvents,
			l.Stream.MsgsPerSec, l.Stream.MessageBytes, l.Stream.Streams)
	}
	if len(rep.Ratios) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "target\tfigure\tlimit\tratio\tgoal\tmet")
		keys := make([]string, 0, len(rep.Ratios))
		for k := range rep.Ratios {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			t := rep.Ratios[k]
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%s\t%s\n", k, t.Figure, t.Limit, t.Ratio, t.Goal, map[bool]string{true: "yes", false: "NO"}[t.Met])
		}
		tw.Flush()
	}
}

// printResults writes the scenarios' table.
func printResults(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\truns/s\tpersisted ev/s\tstreamed msg/s\tlat p50\tp95\tp99 ms\tfirst p50\tp95\tp99 ms\tcpu ms/run\trss MiB\tbytes/event\t")
	for _, r := range results {
		bpe := "-"
		if r.File != nil {
			bpe = fmt.Sprintf("%.0f (file %.0f)", r.File.EventBytesPerEvent, r.File.FileBytesPerEvent)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t%s\t\n",
			r.Name, r.RunsPerSec, r.PersistedPerSec, r.StreamedPerSec,
			r.LatencyMs.P50, r.LatencyMs.P95, r.LatencyMs.P99,
			r.FirstEventMs.P50, r.FirstEventMs.P95, r.FirstEventMs.P99,
			r.ServerCPUPerRunMs, r.PeakRSSMiB, bpe)
	}
	tw.Flush()
}
