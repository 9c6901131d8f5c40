// Package runtrace turns a run's stored events into its trace: a tree of
// spans (the run, each agent's turn, each model call, each tool call) with
// their timing, tokens and cost. The spans are named and nested as the
// OpenTelemetry spans of the telemetry plugin (runner/plugin/telemetry)
// for the same run: "invoke_agent <app>" for the run, under it
// "invoke_agent <agent>" for each agent's turn (a turn nested in the turn
// that called it: a workflow agent's, an agent's that transferred to it,
// a parallel agent's for the first agent of each branch), and under a
// turn "chat <model>" per model call and "execute_tool <tool>" per tool
// call. Where the events say no more than their order, it reads them as
// the runner runs agents: an LLM agent runs the agent it transfers to
// inside its own turn, any other agent's transfer runs after the turn, at
// the top; a model call after an LLM turn's final answer, or an event
// after a custom agent's turn_complete, starts another turn (a loop's
// next pass). Tests keep the two in step (cmd/agentrunner
// TestTraceMatchesExportedSpans, cmd/agentrunner/demo TestDemoTrace,
// runner TestTraceOf*).
//
// It is one function of data to data, so that GetRunTrace, the console
// and any other client see one trace: Build.
//
// Imports: the generated messages only. It must not import the runner,
// agents, plugins, store or gRPC (runner/deps_test.go checks).
package runtrace

import (
	"fmt"
	"slices"
	"strings"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The operation names of the GenAI semantic conventions that start the
// span names.
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
)

// AgentSpanName, ChatSpanName and ToolSpanName are the span names of an
// agent's turn (or, with the app's name, of the run), a model call and a
// tool call.
func AgentSpanName(agent string) string { return OpInvokeAgent + " " + agent }
func ChatSpanName(model string) string  { return OpChat + " " + model }
func ToolSpanName(tool string) string   { return OpExecuteTool + " " + tool }

// span is a TraceSpan being built, with its end.
type span struct {
	pb       *agentrunnerv1.TraceSpan
	parent   *span
	end      time.Time
	handedTo map[string]bool // agents this turn transferred to
	answered bool            // an LLM turn whose model gave its final answer
}

// builder holds what Build knows while it reads the events in order.
type builder struct {
	tree    map[string]*agentrunnerv1.AgentInfo
	parents map[string]string // agent to its parent in the tree
	spans   []*span
	run     *span
	stacks  map[string][]*span // the open agent turns of each branch, innermost last
	calls   map[string]*span   // tool call spans by call id
	// after are the agents handed over to by an agent that is not an LLM
	// agent: the run runs them once the whole turn has ended, at the top.
	after map[string]bool
}

// Build returns the trace of run from its stored events (any order; those
// of other runs and partial ones are skipped), its first span the run's
// own. root is the app's agent tree, for the agents that store no events
// of their own (workflow agents) and the models of LLM agents; nil draws
// only the agents that stored events.
func Build(run *agentrunnerv1.Run, events []*agentrunnerv1.Event, root *agentrunnerv1.AgentInfo) []*agentrunnerv1.TraceSpan {
	b := &builder{tree: map[string]*agentrunnerv1.AgentInfo{}, parents: map[string]string{}, stacks: map[string][]*span{}, calls: map[string]*span{}, after: map[string]bool{}}
	b.index(root, "")
	start := run.GetStartTime()
	if start == nil {
		start = run.GetCreateTime()
	}
	b.run = b.open(nil, &agentrunnerv1.TraceSpan{Name: AgentSpanName(run.GetAppName()), Kind: agentrunnerv1.TraceSpanKind_TRACE_SPAN_KIND_RUN,
		AgentName: root.GetName(), Usage: run.GetUsage(), Cost: run.GetCost()}, start.AsTime())
	evs := slices.Clone(events)
	slices.SortStableFunc(evs, func(a, b *agentrunnerv1.Event) int { return cmpUint(a.GetSequence(), b.GetSequence()) })
	for _, ev := range evs {
		if ev.GetInvocationId() != run.GetRunId() || ev.GetPartial() {
			continue
		}
		b.add(ev)
	}
	return b.finish(run)
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (b *builder) index(a *agentrunnerv1.AgentInfo, parent string) {
	if a == nil {
		return
	}
	b.tree[a.GetName()] = a
	if parent != "" {
		b.parents[a.GetName()] = parent
	}
	for _, s := range a.GetSubAgents() {
		b.index(s, a.GetName())
	}
}

// open adds a span under parent, starting at start.
func (b *builder) open(parent *span, pb *agentrunnerv1.TraceSpan, start time.Time) *span {
	pb.SpanId = fmt.Sprintf("s%d", len(b.spans)+1)
	pb.StartTime = timestamppb.New(start)
	s := &span{pb: pb, parent: parent, end: start}
	if parent != nil {
		pb.ParentSpanId = parent.pb.GetSpanId()
	}
	b.spans = append(b.spans, s)
	return s
}

// reach moves the end of s, and of the spans it ran inside, to t.
func (s *span) reach(t time.Time) {
	for ; s != nil; s = s.parent {
		if t.After(s.end) {
			s.end = t
		}
	}
}

// note records that ev belongs to s.
func (s *span) note(ev *agentrunnerv1.Event) {
	if n := len(s.pb.EventSequences); n == 0 || s.pb.EventSequences[n-1] != ev.GetSequence() {
		s.pb.EventSequences = append(s.pb.EventSequences, ev.GetSequence())
	}
}

// touch records that ev belongs to s, which lasted at least until ev.
func (s *span) touch(ev *agentrunnerv1.Event) {
	s.note(ev)
	s.reach(ev.GetTimestamp().AsTime())
}

// add places one event of the run.
func (b *builder) add(ev *agentrunnerv1.Event) {
	if ev.GetAuthor() == "user" || ev.GetAuthor() == "" {
		b.run.touch(ev)
		return
	}
	custom := b.tree[ev.GetAuthor()].GetKind() == agentrunnerv1.AgentKind_AGENT_KIND_CUSTOM
	call := ev.GetTiming() != nil || ev.GetUsageMetadata() != nil // a model's answer
	turn := b.enter(ev.GetAuthor(), ev.GetBranch(), eventStart(ev), call || custom)
	turn.touch(ev)
	if ev.GetErrorCode() != "" {
		turn.pb.ErrorCode, turn.pb.ErrorMessage = ev.GetErrorCode(), ev.GetErrorMessage()
	}
	if tm := ev.GetTiming(); tm != nil {
		if turn.pb.GetAgentKind() == agentrunnerv1.AgentKind_AGENT_KIND_REMOTE_A2A {
			// A remote agent's turn is timed as a whole: no model call of ours.
			turn.pb.TimeToFirstChunk = tm.GetTimeToFirstChunk()
			turn.reach(tm.GetStartTime().AsTime().Add(tm.GetDuration().AsDuration()))
		} else {
			b.modelCall(turn, ev, tm)
		}
	}
	for _, p := range ev.GetContent().GetParts() {
		if fc := p.GetFunctionCall(); fc != nil {
			b.toolCall(turn, ev, fc)
		}
		if fr := p.GetFunctionResponse(); fr != nil {
			b.toolResponse(turn, ev, fr)
		}
	}
	if (call && !slices.ContainsFunc(ev.GetContent().GetParts(), func(p *agentrunnerv1.Part) bool { return p.GetFunctionCall() != nil })) || (custom && ev.GetTurnComplete()) {
		turn.answered = true // its next model call (event, for a custom agent) is another turn's: a loop's next pass
	}
	b.handOver(turn, ev.GetActions().GetTransferToAgent())
}

// handOver notes that turn transferred to agent: an LLM agent runs the
// target inside its turn; for any other agent the run runs it once the
// turn has ended, at the top.
func (b *builder) handOver(turn *span, agent string) {
	switch {
	case agent == "":
	case turn.pb.GetAgentKind() == agentrunnerv1.AgentKind_AGENT_KIND_LLM || len(b.tree) == 0:
		if turn.handedTo == nil {
			turn.handedTo = map[string]bool{}
		}
		turn.handedTo[agent] = true
	default:
		b.after[agent] = true
	}
}

// eventStart is when the step an event ends began: its model call's or
// remote turn's start, else the event's own time.
func eventStart(ev *agentrunnerv1.Event) time.Time {
	if st := ev.GetTiming().GetStartTime(); st != nil {
		return st.AsTime()
	}
	for _, p := range ev.GetContent().GetParts() {
		if st := p.GetFunctionResponse().GetTiming().GetStartTime(); st != nil {
			return st.AsTime()
		}
	}
	return ev.GetTimestamp().AsTime()
}

func (b *builder) modelCall(turn *span, ev *agentrunnerv1.Event, tm *agentrunnerv1.Timing) {
	name := b.tree[ev.GetAuthor()].GetModel()
	if at := tm.GetAttempts(); len(at) > 0 && at[0].GetModel() != "" {
		name = at[0].GetModel()
	}
	if name == "" {
		name = ev.GetModelVersion()
	}
	start := tm.GetStartTime().AsTime()
	s := b.open(turn, &agentrunnerv1.TraceSpan{Name: ChatSpanName(name), Kind: agentrunnerv1.TraceSpanKind_TRACE_SPAN_KIND_MODEL_CALL,
		AgentName: ev.GetAuthor(), Branch: ev.GetBranch(), Model: name, TimeToFirstChunk: tm.GetTimeToFirstChunk(),
		Usage: ev.GetUsageMetadata(), Cost: ev.GetCost(), ErrorCode: ev.GetErrorCode(), ErrorMessage: ev.GetErrorMessage()}, start)
	s.reach(start.Add(tm.GetDuration().AsDuration()))
	s.note(ev) // timed: its end is its own, not its event's
	turn.pb.Usage = addUsage(turn.pb.GetUsage(), ev.GetUsageMetadata())
	turn.pb.Cost = addCost(turn.pb.GetCost(), ev.GetCost())
}

func (b *builder) toolCall(turn *span, ev *agentrunnerv1.Event, fc *agentrunnerv1.FunctionCall) {
	s := b.calls[fc.GetId()]
	if s == nil {
		s = b.open(turn, &agentrunnerv1.TraceSpan{Name: ToolSpanName(fc.GetName()), Kind: agentrunnerv1.TraceSpanKind_TRACE_SPAN_KIND_TOOL_CALL,
			AgentName: ev.GetAuthor(), Branch: ev.GetBranch(), ToolName: fc.GetName(), CallId: fc.GetId(), Open: true}, ev.GetTimestamp().AsTime())
		b.calls[fc.GetId()] = s
	}
	s.touch(ev)
}

func (b *builder) toolResponse(turn *span, ev *agentrunnerv1.Event, fr *agentrunnerv1.FunctionResponse) {
	s := b.calls[fr.GetId()]
	if s == nil { // its call is in an earlier run (an answer to a waiting call)
		s = b.open(turn, &agentrunnerv1.TraceSpan{Name: ToolSpanName(fr.GetName()), Kind: agentrunnerv1.TraceSpanKind_TRACE_SPAN_KIND_TOOL_CALL,
			AgentName: ev.GetAuthor(), Branch: ev.GetBranch(), ToolName: fr.GetName(), CallId: fr.GetId()}, ev.GetTimestamp().AsTime())
		b.calls[fr.GetId()] = s
	}
	s.pb.Open = false
	if tm := fr.GetTiming(); tm != nil && tm.GetStartTime() != nil {
		// Timed: its bar is its timing, not its events' times.
		s.pb.StartTime = tm.GetStartTime()
		s.end = tm.GetStartTime().AsTime()
		s.reach(tm.GetStartTime().AsTime().Add(tm.GetDuration().AsDuration()))
		s.note(ev)
	} else {
		s.touch(ev)
	}
	if to := ev.GetActions().GetTransferToAgent(); to != "" && fr.GetName() == "transfer_to_agent" {
		s.pb.TransferToAgent = to
	}
	if msg := fr.GetResponse().GetFields()["error"].GetStringValue(); msg != "" {
		s.pb.ErrorCode, s.pb.ErrorMessage = "TOOL_ERROR", msg
	}
}

// enter returns the open turn of agent in branch, opening it (and the
// turns of the workflow agents between it and the turn that called it)
// when the agent's turn is new: none is open, or the open one has its
// final answer and call (a model's answer) begins another.
func (b *builder) enter(agent, branch string, start time.Time, call bool) *span {
	if s := b.afterTurn(agent, branch, start); s != nil {
		return s
	}
	st := b.stacks[branch]
	if n := len(st); n > 0 && st[n-1].handedTo[agent] && st[n-1].pb.GetAgentName() != agent {
		// Handed over to: a new turn inside the one that handed over,
		// even of an agent with a turn open further out (a sub-agent
		// handing back to its parent runs the parent again, inside).
		delete(st[n-1].handedTo, agent)
		b.push(st[n-1], agent, branch, start)
		return b.stacks[branch][n]
	}
	if i := slices.IndexFunc(st, func(s *span) bool { return s.pb.GetAgentName() == agent }); i >= 0 {
		if !call || !st[i].answered {
			b.stacks[branch] = st[:i+1] // the turns it called have ended
			return st[i]
		}
		st = st[:i] // that turn has ended
	}
	// The caller is the innermost open turn of an ancestor in the tree,
	// or of an agent that handed over to this one; the turns above it in
	// the branch have ended.
	for len(st) > 0 && !b.runs(st[len(st)-1], agent) {
		st = st[:len(st)-1]
	}
	b.stacks[branch] = st
	var caller *span
	if len(st) > 0 {
		caller = st[len(st)-1]
	} else {
		caller = b.branchCaller(branch, start)
	}
	for _, a := range b.between(caller, agent) {
		b.push(caller, a, branch, start)
		caller = b.stacks[branch][len(b.stacks[branch])-1]
	}
	b.push(caller, agent, branch, start)
	return b.stacks[branch][len(b.stacks[branch])-1]
}

// runs reports whether the turn s is one that runs agent: a tree
// ancestor's, or one that handed over to it.
func (b *builder) runs(s *span, agent string) bool {
	return s.handedTo[agent] || b.isAncestor(s.pb.GetAgentName(), agent)
}

func (b *builder) isAncestor(anc, agent string) bool {
	for a := b.parents[agent]; a != ""; a = b.parents[a] {
		if a == anc {
			return true
		}
	}
	return false
}

// branchCaller is the turn the first agent of a branch runs under: the
// parallel agent that made the branch ("<branch>.<parallel>.<child>"),
// in its own branch; the run for the root branch.
func (b *builder) branchCaller(branch string, start time.Time) *span {
	parts := strings.Split(branch, ".")
	if branch == "" || len(parts) < 2 {
		return b.run
	}
	return b.enter(parts[len(parts)-2], strings.Join(parts[:len(parts)-2], "."), start, false)
}

// between lists the workflow agents from below caller's agent down to
// agent's parent in the tree, outermost first: those whose turns hold
// agent's. A caller that handed over to agent has none between; the run
// has every ancestor of agent.
func (b *builder) between(caller *span, agent string) []string {
	if caller.handedTo[agent] {
		return nil
	}
	stop := ""
	if caller != b.run {
		stop = caller.pb.GetAgentName()
	}
	var out []string
	for a := b.parents[agent]; a != "" && a != stop; a = b.parents[a] {
		out = append(out, a)
	}
	slices.Reverse(out)
	return out
}

// afterTurn opens the turn of agent, and of the workflow agents above it,
// when the run runs it (or an agent above it) at the top after a turn
// that handed over to it; nil otherwise.
func (b *builder) afterTurn(agent, branch string, start time.Time) *span {
	for t := range b.after {
		if t != agent && !b.isAncestor(t, agent) { // a workflow target writes no event: its children do
			continue
		}
		delete(b.after, t)
		b.stacks = map[string][]*span{} // every turn has ended
		caller := b.run
		for _, a := range append(b.chain(t, agent), agent) {
			b.push(caller, a, branch, start)
			caller = b.stacks[branch][len(b.stacks[branch])-1]
		}
		return caller
	}
	return nil
}

// chain lists top and the agents under it down to agent's parent,
// outermost first; none when top is agent.
func (b *builder) chain(top, agent string) []string {
	if top == agent {
		return nil
	}
	var out []string
	for a := b.parents[agent]; a != ""; a = b.parents[a] {
		out = append(out, a)
		if a == top {
			break
		}
	}
	slices.Reverse(out)
	return out
}

func (b *builder) push(caller *span, agent, branch string, start time.Time) {
	s := b.open(caller, &agentrunnerv1.TraceSpan{Name: AgentSpanName(agent), Kind: agentrunnerv1.TraceSpanKind_TRACE_SPAN_KIND_AGENT,
		AgentName: agent, AgentKind: b.tree[agent].GetKind(), Branch: branch}, start)
	b.stacks[branch] = append(b.stacks[branch], s)
}

// finish sets every span's duration and marks what is still open.
func (b *builder) finish(run *agentrunnerv1.Run) []*agentrunnerv1.TraceSpan {
	active := run.GetEndTime() == nil
	if !active {
		b.run.reach(run.GetEndTime().AsTime())
	}
	pending := map[string]bool{}
	for _, id := range run.GetPendingCallIds() {
		pending[id] = true
	}
	out := make([]*agentrunnerv1.TraceSpan, 0, len(b.spans))
	for _, s := range b.spans {
		s.pb.Duration = durationpb.New(s.end.Sub(s.pb.GetStartTime().AsTime()))
		if s.pb.GetKind() == agentrunnerv1.TraceSpanKind_TRACE_SPAN_KIND_TOOL_CALL {
			s.pb.Waiting = pending[s.pb.GetCallId()] && s.pb.GetOpen()
			s.pb.Open = s.pb.GetOpen() && (active || s.pb.GetWaiting())
		}
		out = append(out, s.pb)
	}
	if active {
		b.run.pb.Open = true
		for _, st := range b.stacks {
			for _, s := range st {
				s.pb.Open = true
			}
		}
	}
	return out
}

// addUsage sums the token counts that matter for a trace.
func addUsage(a, b *agentrunnerv1.UsageMetadata) *agentrunnerv1.UsageMetadata {
	if b == nil {
		return a
	}
	if a == nil {
		a = &agentrunnerv1.UsageMetadata{}
	}
	a.PromptTokenCount += b.GetPromptTokenCount()
	a.CandidatesTokenCount += b.GetCandidatesTokenCount()
	a.ThoughtsTokenCount += b.GetThoughtsTokenCount()
	a.CachedContentTokenCount += b.GetCachedContentTokenCount()
	a.ToolUsePromptTokenCount += b.GetToolUsePromptTokenCount()
	a.TotalTokenCount += b.GetTotalTokenCount()
	return a
}

// addCost sums costs of one currency; the model is kept only when all
// are of it.
func addCost(a, b *agentrunnerv1.Cost) *agentrunnerv1.Cost {
	if b == nil {
		return a
	}
	if a == nil {
		return proto.CloneOf(b)
	}
	a.Micros += b.GetMicros()
	a.UnpricedCalls += b.GetUnpricedCalls()
	if a.GetModel() != b.GetModel() {
		a.Model = ""
	}
	return a
}
