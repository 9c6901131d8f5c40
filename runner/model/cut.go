package model

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// A provider bills a call that was cut off mid-stream as far as it got:
// the prompt in full, the output it generated. The runner counts such a
// call too, or stopping each run just before its end would dodge every
// budget. What the provider reported before the cut is kept; where it
// reported less than what was demonstrably sent and received, the counts
// are estimated from the request and the streamed text, and marked so.

// charsPerToken is the estimate's rate: about four characters of English
// text a token, for every provider's tokenizer.
const charsPerToken = 4

// blobTokens is the estimate of one inline or file blob of a prompt:
// Gemini counts an image at 258 tokens, and the others near it.
const blobTokens = 258

// WithUsage returns err carrying the usage the provider reported before
// the call failed (u nil: err as it is). UsageOf reads it back through
// any wrapping.
func WithUsage(err error, u *agentrunnerv1.UsageMetadata) error {
	if err == nil || u == nil {
		return err
	}
	return &usageError{err: err, usage: u}
}

// UsageOf returns the usage a failed call's provider reported before
// the failure (WithUsage), nil when it reported none.
func UsageOf(err error) *agentrunnerv1.UsageMetadata {
	var ue *usageError
	if errors.As(err, &ue) {
		return ue.usage
	}
	return nil
}

type usageError struct {
	err   error
	usage *agentrunnerv1.UsageMetadata
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// CutError is the error of a call the caller's context cut off while it
// was in flight (cancelled, drained, past the run's deadline): Usage and
// Cost count it, as CutUsage made them and the model's price priced them,
// so that the runner can store them with the event that says the run
// stopped.
type CutError struct {
	Err   error
	Usage *agentrunnerv1.UsageMetadata
	Cost  *agentrunnerv1.Cost
}

func (e *CutError) Error() string { return e.Err.Error() }
func (e *CutError) Unwrap() error { return e.Err }

// CutUsage is the usage of a call cut off mid-stream: reported (nil when
// the provider reported nothing) raised, where lower, to the estimate of
// req's prompt and of the streamed parts (answer and thought text),
// marked estimated when anything was raised. reported is not changed.
func CutUsage(req *Request, reported *agentrunnerv1.UsageMetadata, streamed []*agentrunnerv1.Part) *agentrunnerv1.UsageMetadata {
	u := &agentrunnerv1.UsageMetadata{}
	if reported != nil {
		u = proto.CloneOf(reported)
	}
	var answer, thought int
	for _, p := range streamed {
		if p.GetThought() {
			thought += len(p.GetText())
		} else {
			answer += partChars(p)
		}
	}
	raise := func(n *int32, est int32) {
		if *n < est {
			*n, u.Estimated = est, true
		}
	}
	raise(&u.PromptTokenCount, EstimatePrompt(req))
	raise(&u.CandidatesTokenCount, tokens(answer))
	raise(&u.ThoughtsTokenCount, tokens(thought))
	if sum := u.PromptTokenCount + u.CandidatesTokenCount + u.ThoughtsTokenCount + u.ToolUsePromptTokenCount; u.TotalTokenCount < sum {
		u.TotalTokenCount = sum
	}
	return u
}

// EstimatePrompt estimates the tokens of req's prompt: its instruction,
// contents and tool declarations, at about four characters a token, and a
// blob at what an image costs. Never below 1: a call sends something.
func EstimatePrompt(req *Request) int32 {
	if req == nil {
		return 1
	}
	n := len(req.SystemInstruction)
	blobs := 0
	for _, c := range req.Contents {
		for _, p := range c.GetParts() {
			if p.GetInlineData() != nil || p.GetFileData() != nil {
				blobs++
				continue
			}
			n += partChars(p)
		}
	}
	for _, d := range req.Tools {
		n += len(d.Name) + len(d.Description) + 64 // and its schema, roughly
	}
	return max(1, tokens(n)+int32(blobs*blobTokens))
}

// partChars is the size of a part as text: its text, or the encoding of
// a function call or response.
func partChars(p *agentrunnerv1.Part) int {
	switch {
	case p.GetFunctionCall() != nil:
		return len(p.GetFunctionCall().GetName()) + proto.Size(p.GetFunctionCall().GetArgs())
	case p.GetFunctionResponse() != nil:
		return len(p.GetFunctionResponse().GetName()) + proto.Size(p.GetFunctionResponse().GetResponse())
	}
	return len(p.GetText())
}

// tokens is the estimate of n characters, rounded up, within int32.
func tokens(n int) int32 {
	t := (int64(n) + charsPerToken - 1) / charsPerToken
	return int32(min(t, 1<<31-1))
}

// CutReporter receives the usage and cost of a call its consumer stopped
// mid-stream (it stopped reading: a parallel branch of a stopped run),
// which no error can carry since nobody reads one. See WithCutReporter.
type CutReporter func(usage *agentrunnerv1.UsageMetadata, cost *agentrunnerv1.Cost)

type cutReporterKey struct{}

// WithCutReporter returns ctx under which a model wrapper that knows a
// call's price (package retry) reports such a call to fn.
func WithCutReporter(ctx context.Context, fn CutReporter) context.Context {
	return context.WithValue(ctx, cutReporterKey{}, fn)
}

// ReportCut reports a call its consumer stopped to ctx's CutReporter, if
// any.
func ReportCut(ctx context.Context, usage *agentrunnerv1.UsageMetadata, cost *agentrunnerv1.Cost) {
	if fn, ok := ctx.Value(cutReporterKey{}).(CutReporter); ok && fn != nil {
		fn(usage, cost)
	}
}
