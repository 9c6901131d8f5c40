package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TestTurnsOfUncomparableSpans: under a remote parent (a traceparent the
// caller sent), a no-op tracer's spans have a dynamic type that == cannot
// compare; an agent that runs again inside its own turn, its inner turn
// ending and then its outer, must neither panic nor lose the outer turn.
// It panicked when turns compared the spans themselves.
func TestTurnsOfUncomparableSpans(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	parent := trace.ContextWithRemoteSpanContext(context.Background(), sc)
	tracer := noop.NewTracerProvider().Tracer("t")
	_, outerSpan := tracer.Start(parent, "outer")
	_, innerSpan := tracer.Start(parent, "inner")

	tr := newTurns()
	outer := tr.push("run", "", "root", outerSpan)
	inner := tr.push("run", "", "root", innerSpan)
	if c := tr.caller("run", ""); c != inner {
		t.Fatalf("caller = %v, want the inner turn", c)
	}
	if got := tr.pop("run", "", "root", inner); got != outer {
		t.Fatalf("pop of the inner turn returned %v, want the outer turn", got)
	}
	if got := tr.pop("run", "", "root", outer); got != nil {
		t.Fatalf("pop of the outer turn returned %v, want none", got)
	}
	if open := tr.drop("run"); len(open) != 0 {
		t.Fatalf("%d turns left open", len(open))
	}
}
