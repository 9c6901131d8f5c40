package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/types/known/structpb"
)

// compactionChunk bounds the events one summarizer call reads: a longer
// stretch is summarized in chunks, each call taking the summary so far in.
const compactionChunk = 500

// maxSummaryBytes bounds a summary's text; the summarizer is asked for
// at most summaryTokens tokens, and a longer answer is cut.
const (
	maxSummaryBytes = 32 << 10
	summaryTokens   = 4096
)

// Compaction is runner.Compaction as a turn reads it, the runner's
// defaults filled in (the runner converts one into the other): its doc
// says what each field does. Compaction runs at the end of a run that
// ended without error, as its last step; its event is stored and
// streamed like any other.
type Compaction struct {
	// Summarizer writes the summaries. Nil turns compaction off: agents
	// then see the whole history, however long.
	Summarizer model.Model
	// Instruction is the summarizer's system instruction.
	Instruction string
	// Interval compacts once this many runs have stored events since the
	// last compaction; zero turns the trigger off.
	Interval int
	// Overlap is how many of the latest runs stay verbatim after a
	// compaction; less than Interval.
	Overlap int
	// TokenThreshold compacts when a model call of the run reported a
	// prompt of at least this many tokens; zero turns the trigger off.
	TokenThreshold int
	// MaxEvents is the hard cap: more uncompacted events than this are
	// compacted whatever the triggers say, with a warning; zero or
	// negative: no cap.
	MaxEvents int
}

// compactionPlan is the stretch a compaction covers.
type compactionPlan struct {
	prev       *agentrunnerv1.EventCompaction // the newest compaction, or nil
	start, end uint64                         // the new range
	events     []*agentrunnerv1.Event         // to summarize: after prev's range, up to end
	reason     string
}

// planCompaction decides whether the session view events (everything
// after the newest compaction's range, the run's own events included)
// needs a compaction, and over which range. runID is the run that just
// ended.
func (c Compaction) planCompaction(events []*agentrunnerv1.Event, runID string) *compactionPlan {
	p, open := openEvents(events)
	reason, keep := c.trigger(open, nil, runID)
	if reason == "" {
		return nil
	}
	p.reason = reason
	return p.cover(open, keep)
}

// dueAfter reports whether compaction would run at the end of run runID
// once next, an event not stored yet, is stored after events: the turn
// holds a final answer back for the final record only when it would not
// (held.go), since a summarizer reads stored events.
func (c Compaction) dueAfter(events []*agentrunnerv1.Event, next *agentrunnerv1.Event, runID string) bool {
	if c.Summarizer == nil {
		return false
	}
	p, open := openEvents(events)
	reason, keep := c.trigger(open, next, runID)
	if reason == "" {
		return false // most runs: decided from counts, without a copy
	}
	return p.cover(append(open[:len(open):len(open)], next), keep) != nil
}

// openEvents returns a plan holding the newest compaction among events,
// if any, and the events after its range.
func openEvents(events []*agentrunnerv1.Event) (*compactionPlan, []*agentrunnerv1.Event) {
	p := &compactionPlan{}
	// Most runs compact nothing: decide that from counts, without
	// copying the history.
	first := len(events) // index of the first uncompacted event
	for i := len(events) - 1; i >= 0; i-- {
		if cc := events[i].GetActions().GetCompaction(); cc != nil {
			p.prev = cc
			break
		}
	}
	for i, ev := range events {
		if ev.GetSequence() > p.prev.GetEndSequence() {
			first = i
			break
		}
	}
	return p, events[first:]
}

// trigger returns why the uncompacted events open, with next after them
// when not nil, call for a compaction, and how many runs it keeps
// verbatim; "" when they do not.
func (c Compaction) trigger(open []*agentrunnerv1.Event, next *agentrunnerv1.Event, runID string) (reason string, keep int) {
	keep = c.Overlap
	// Counting runs compares invocation ids, event by event: only for an
	// app that compacts by interval.
	if c.Interval > 0 {
		if runs := countRuns(open) + newRun(open, next); runs >= c.Interval {
			return fmt.Sprintf("%d runs since the last compaction (interval %d)", runs, c.Interval), keep
		}
	}
	if c.TokenThreshold > 0 {
		prompt := promptTokens(open, runID)
		if next != nil && next.GetInvocationId() == runID {
			prompt = max(prompt, int(next.GetUsageMetadata().GetPromptTokenCount()))
		}
		if prompt >= c.TokenThreshold {
			return fmt.Sprintf("a prompt of %d tokens (threshold %d)", prompt, c.TokenThreshold), max(keep, 1)
		}
	}
	if c.MaxEvents > 0 {
		n := countUncompacted(open)
		if next != nil && next.GetActions().GetCompaction() == nil {
			n++
		}
		if n > c.MaxEvents {
			return fmt.Sprintf("%d uncompacted events, over the cap of %d", n, c.MaxEvents), max(keep, 1)
		}
	}
	return "", 0
}

// newRun is 1 when next, after open, starts a run of its own (as
// countRuns counts them), else 0.
func newRun(open []*agentrunnerv1.Event, next *agentrunnerv1.Event) int {
	if next == nil || next.GetActions().GetCompaction() != nil {
		return 0
	}
	if len(open) == 0 || next.GetInvocationId() == "" || open[len(open)-1].GetInvocationId() != next.GetInvocationId() {
		return 1
	}
	return 0
}

// countUncompacted counts the events of open that are not compactions.
func countUncompacted(open []*agentrunnerv1.Event) int {
	n := 0
	for _, ev := range open {
		if ev.GetActions().GetCompaction() == nil {
			n++
		}
	}
	return n
}

// countRuns counts the runs that stored the events of open that are not
// compactions; an event without an invocation id counts as a run of its
// own.
func countRuns(open []*agentrunnerv1.Event) int {
	runs := 0
	for i, ev := range open {
		if ev.GetActions().GetCompaction() != nil {
			continue
		}
		if i+1 == len(open) || open[i+1].GetInvocationId() != ev.GetInvocationId() || ev.GetInvocationId() == "" {
			runs++
		}
	}
	return runs
}

// cover fills in the plan's range: the uncompacted events open but the
// last keep runs, cut before any call still waiting for its response.
func (p *compactionPlan) cover(open []*agentrunnerv1.Event, keep int) *compactionPlan {
	var events []*agentrunnerv1.Event
	for _, ev := range open {
		if ev.GetActions().GetCompaction() == nil {
			events = append(events, ev)
		}
	}
	runs := runBounds(events)
	if len(runs) <= keep {
		return nil
	}
	covered := beforeOpenCalls(events[:runs[len(runs)-keep-1]])
	if len(covered) == 0 {
		return nil
	}
	p.events = covered
	p.start, p.end = covered[0].GetSequence(), covered[len(covered)-1].GetSequence()
	if p.prev != nil {
		p.start = p.prev.GetStartSequence()
	}
	return p
}

// maxCompactionAuthors bounds a compaction's authors. An app's tree names
// far fewer agents; only events appended from outside under made-up
// authors could pass it, and then the oldest are dropped.
const maxCompactionAuthors = 64

// authors lists the authors of the events p covers, the user left out,
// newest first, each once: the previous compaction's authors stand for
// the events it covered. Agent selection (agent.Tree.SelectAgent) reads
// them in place of the covered events, which the agents' view no longer
// holds. Carrying the names costs a few bytes per compaction; reading
// the covered events back from the store would cost a read per run.
func (p *compactionPlan) authors() []string {
	var out []string
	seen := map[string]bool{}
	add := func(a string) {
		if a != agent.UserAuthor && a != "" && !seen[a] && len(out) < maxCompactionAuthors {
			seen[a] = true
			out = append(out, a)
		}
	}
	for i := len(p.events) - 1; i >= 0; i-- {
		add(p.events[i].GetAuthor())
	}
	for _, a := range p.prev.GetAuthors() {
		add(a)
	}
	return out
}

// runBounds returns, for each run that stored events, the index in events
// just past its last event, in order. Events of one run are contiguous
// (a session runs one run at a time); an event appended from outside a
// run counts as a run of its own.
func runBounds(events []*agentrunnerv1.Event) []int {
	var bounds []int
	for i, ev := range events {
		if i+1 == len(events) || events[i+1].GetInvocationId() != ev.GetInvocationId() || ev.GetInvocationId() == "" {
			bounds = append(bounds, i+1)
		}
	}
	return bounds
}

// promptTokens is the largest prompt a model call of run runID reported.
func promptTokens(events []*agentrunnerv1.Event, runID string) int {
	n := 0
	for _, ev := range events {
		if ev.GetInvocationId() == runID {
			n = max(n, int(ev.GetUsageMetadata().GetPromptTokenCount()))
		}
	}
	return n
}

// beforeOpenCalls cuts events before the first function call that no
// response among them answers: a long-running tool, a confirmation or an
// input request still waiting must stay where the model and the caller's
// answer can find it.
func beforeOpenCalls(events []*agentrunnerv1.Event) []*agentrunnerv1.Event {
	answered := map[string]bool{}
	for _, ev := range events {
		for _, part := range ev.GetContent().GetParts() {
			if id := part.GetFunctionResponse().GetId(); id != "" {
				answered[id] = true
			}
		}
	}
	for i, ev := range events {
		for _, part := range ev.GetContent().GetParts() {
			if id := part.GetFunctionCall().GetId(); id != "" && !answered[id] {
				return events[:i]
			}
		}
	}
	return events
}

// compact runs at the end of a run: when the session's uncompacted events
// call for it, the summarizer condenses them and the compaction event is
// stored and streamed. A summarizer that fails costs the run nothing: the
// failure is logged and the next run tries again.
func (in *invocation) compact(ctx context.Context) error {
	c := in.env.Compaction
	events := in.inv.Events()
	if c.Summarizer == nil {
		if n := c.MaxEvents; n > 0 && len(events) > n {
			in.env.Log.Warn("session history passes the compaction cap, and the app has no summarizer: its agents see every event", "session", in.key.Session, "events", len(events), "cap", n)
		}
		return nil
	}
	p := c.planCompaction(events, in.job.ID)
	if p == nil {
		return nil
	}
	// The summarizer's calls are paid for like the agents': a run whose
	// budget is reached makes none. The compaction waits for a run with
	// budget left; the agents see the whole history meanwhile.
	if err := in.inv.BudgetAllows(ctx); err != nil {
		in.env.Log.Warn("compaction waits: a budget is reached", "session", in.key.Session, "run", in.job.ID, "reason", p.reason, "err", err)
		return nil
	}
	summary, spend, err := c.summarize(ctx, p)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		in.env.Log.Warn("compaction failed; the next run tries again", "session", in.key.Session, "run", in.job.ID, "reason", p.reason, "err", err)
		return nil
	}
	log := in.env.Log.Info
	if strings.Contains(p.reason, "cap") {
		log = in.env.Log.Warn
	}
	log("compacting session history", "session", in.key.Session, "run", in.job.ID, "reason", p.reason, "start", p.start, "end", p.end, "summarized", len(p.events))
	// The summarizer's tokens and cost ride on the compaction event, so
	// that the run's, its author's and the session's totals count them as
	// they count every other event's.
	ev := &agentrunnerv1.Event{Author: agent.UserAuthor, UsageMetadata: spend.GetUsage(), Cost: spend.GetCost(), Actions: &agentrunnerv1.EventActions{Compaction: &agentrunnerv1.EventCompaction{
		StartSequence: p.start, EndSequence: p.end, Summary: summary, Authors: p.authors(),
	}}}
	_, err = in.emit(ctx, ev)
	return err
}

// summarize condenses p's events, in chunks, each call folding the
// summary so far in. spend sums the calls' token counts and costs.
func (c Compaction) summarize(ctx context.Context, p *compactionPlan) (summary *agentrunnerv1.Content, spend *agentrunnerv1.Spend, err error) {
	summary = p.prev.GetSummary()
	for events := p.events; len(events) > 0; {
		n := min(len(events), compactionChunk)
		var call *model.Response
		if summary, call, err = c.summarizeChunk(ctx, summary, events[:n]); err != nil {
			return nil, nil, err
		}
		if call.Usage != nil {
			spend = store.AddEventSpend(spend, &agentrunnerv1.Event{UsageMetadata: call.Usage, Cost: call.Cost})
			if spend.Cost.Model == "" {
				spend.Cost.Model = call.Cost.GetModel()
			}
		}
		events = events[n:]
	}
	return summary, spend, nil
}

// summarizeChunk makes one summarizer call and returns the summary with
// the call's usage and cost (on a Response of their own).
func (c Compaction) summarizeChunk(ctx context.Context, prev *agentrunnerv1.Content, events []*agentrunnerv1.Event) (*agentrunnerv1.Content, *model.Response, error) {
	var b strings.Builder
	if text := contentText(prev); text != "" {
		b.WriteString("Summary of the earlier conversation:\n" + text + "\n\n")
	}
	b.WriteString("The conversation since:\n")
	for _, ev := range events {
		writeTranscript(&b, ev)
	}
	b.WriteString("\nSummarize the conversation above.")
	req := &model.Request{SystemInstruction: c.Instruction, Config: &model.GenerateConfig{MaxOutputTokens: summaryTokens}, Contents: []*agentrunnerv1.Content{{Role: agent.RoleUser, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: b.String()}}}}}}
	var out *agentrunnerv1.Content
	var call model.Response
	for resp, err := range c.Summarizer.Generate(ctx, req, false) {
		if err != nil {
			return nil, nil, err
		}
		if resp.ErrorCode != "" {
			return nil, nil, fmt.Errorf("summarizer: %s: %s", resp.ErrorCode, resp.ErrorMessage)
		}
		out = resp.Content
		if resp.Usage != nil {
			// The call's usage and cost, on its final response.
			call.Usage, call.Cost = resp.Usage, resp.Cost
		}
	}
	text := contentText(out)
	if text == "" {
		return nil, nil, errors.New("summarizer returned no text")
	}
	if len(text) > maxSummaryBytes {
		// Every later request carries the summary, and the next
		// summary folds it in: a runaway one must not grow with them.
		text = strings.ToValidUTF8(text[:maxSummaryBytes], "")
	}
	return &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}}, &call, nil
}

// contentText joins the non-thought text parts of c.
func contentText(c *agentrunnerv1.Content) string {
	var parts []string
	for _, p := range c.GetParts() {
		if t := p.GetText(); t != "" && !p.GetThought() {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// writeTranscript writes one event as lines of a transcript the
// summarizer reads.
func writeTranscript(b *strings.Builder, ev *agentrunnerv1.Event) {
	who := "[" + ev.GetAuthor() + "]"
	if ev.GetErrorCode() != "" {
		fmt.Fprintf(b, "%s failed: %s %s\n", who, ev.GetErrorCode(), ev.GetErrorMessage())
	}
	for _, p := range ev.GetContent().GetParts() {
		switch {
		case p.GetThought():
		case p.GetText() != "":
			fmt.Fprintf(b, "%s said: %s\n", who, p.GetText())
		case p.GetFunctionCall() != nil:
			fmt.Fprintf(b, "%s called tool `%s` with %s\n", who, p.GetFunctionCall().GetName(), jsonText(p.GetFunctionCall().GetArgs()))
		case p.GetFunctionResponse() != nil:
			fmt.Fprintf(b, "%s tool `%s` returned %s\n", who, p.GetFunctionResponse().GetName(), jsonText(p.GetFunctionResponse().GetResponse()))
		case p.GetInlineData() != nil || p.GetFileData() != nil:
			fmt.Fprintf(b, "%s attached a file\n", who)
		}
	}
}

// jsonText renders a struct as compact JSON with sorted keys, for the
// transcript.
func jsonText(s *structpb.Struct) string {
	out, err := json.Marshal(s.AsMap())
	if err != nil {
		return "{}"
	}
	return string(out)
}
