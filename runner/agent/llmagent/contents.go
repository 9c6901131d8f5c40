package llmagent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"google.golang.org/protobuf/types/known/structpb"
)

// This file builds the conversation an LLM agent sends to its model from
// the session's events, as the reference frameworks do.

// historyContents returns the conversation as the agent named self sees it:
// user turns and its own turns as they are, other agents' turns as context
// the user relays ("For context: [name] said: ..."), and each function call
// of its own followed by its responses (see pairFunctionResponses). Partial
// events, events without content and thoughts of other agents are left
// out. The events must already be those visible in the agent's branch.
func historyContents(self string, events []*agentrunnerv1.Event) []*agentrunnerv1.Content {
	out := make([]*agentrunnerv1.Content, 0, len(events))
	for _, ev := range events {
		c := ev.GetContent()
		if ev.GetPartial() || len(c.GetParts()) == 0 {
			continue
		}
		if ev.GetAuthor() == self || ev.GetAuthor() == agent.UserAuthor {
			if c = withoutConfirmations(c); c != nil {
				out = append(out, c)
			}
			continue
		}
		if oc := otherAgentContent(ev.GetAuthor(), c); oc != nil {
			out = append(out, oc)
		}
	}
	return pairFunctionResponses(out)
}

// history is the conversation of a model request, with what was learnt
// of it while it was built.
type history struct {
	contents []*agentrunnerv1.Content
	// bytes is what promptTokens counts of contents, or -1 when it was
	// not counted on the way.
	bytes int
}

// modelHistory returns the conversation the agent named self sends its
// model from the events visible in its branch: without what rewinds
// undid, from the newest compaction's summary on, only the current turn
// when currentOnly (include_contents none), then as historyContents
// makes it. It runs on every model call over the whole history, so the
// common case, a session never rewound nor compacted, is done in one
// pass (plainHistory); the others take the steps one after the other.
func modelHistory(self string, events []*agentrunnerv1.Event, currentOnly bool) history {
	if !currentOnly {
		if h, ok := plainHistory(self, events); ok {
			return h
		}
	}
	events = withSummary(agent.WithoutRewound(events))
	if currentOnly {
		events = currentTurn(self, events)
	}
	return history{contents: historyContents(self, events), bytes: -1}
}

// plainHistory is historyContents(self, events), made in one pass that
// also counts the contents' bytes for promptTokens and notes whether any
// part has a function call or response id (without, pairing them changes
// nothing). ok is false, and nothing is returned, when an event rewinds
// or compacts: WithoutRewound and withSummary have work to do first.
func plainHistory(self string, events []*agentrunnerv1.Event) (h history, ok bool) {
	p := plain{out: make([]*agentrunnerv1.Content, 0, len(events))}
	if !p.extend(self, events) {
		return history{}, false
	}
	return p.history(), true
}

// plain is a history without rewinds and compactions being made, event
// by event: its contents before pairFunctionResponses (out, never
// appended to once handed out), their bytes, and whether a part has an
// id.
type plain struct {
	out   []*agentrunnerv1.Content
	bytes int
	ids   bool
}

// extend adds events to p, as historyContents would; false when one
// rewinds or compacts (p is then of no use).
func (p *plain) extend(self string, events []*agentrunnerv1.Event) bool {
	for _, ev := range events {
		if a := ev.GetActions(); a != nil && (a.GetRewindBeforeInvocationId() != "" || a.GetCompaction() != nil) {
			return false
		}
		c := ev.GetContent()
		if ev.GetPartial() || len(c.GetParts()) == 0 {
			continue
		}
		own := ev.GetAuthor() == self || ev.GetAuthor() == agent.UserAuthor
		if !own {
			if c = otherAgentContent(ev.GetAuthor(), c); c == nil {
				continue
			}
		}
		cn, cids, confirms := scanParts(c.GetParts())
		if own && confirms {
			if c = withoutConfirmations(c); c == nil {
				continue
			}
			cn, cids, _ = scanParts(c.GetParts())
		}
		p.bytes += cn
		p.ids = p.ids || cids
		p.out = append(p.out, c)
	}
	return true
}

func (p *plain) history() history {
	if p.ids {
		return history{contents: pairFunctionResponses(p.out), bytes: -1}
	}
	return history{contents: p.out, bytes: p.bytes}
}

// scanParts returns, in one look at each part, what promptTokens counts
// of parts, whether one has a function call or response id, and whether
// one is a confirmation request or answer (isConfirmation).
func scanParts(parts []*agentrunnerv1.Part) (n int, ids, confirms bool) {
	for _, p := range parts {
		switch d := p.GetData().(type) {
		case *agentrunnerv1.Part_Text:
			n += len(d.Text)
		case *agentrunnerv1.Part_FunctionCall:
			if fc := d.FunctionCall; fc != nil {
				n += len(fc.GetName()) + 4*(1+len(fc.GetArgs().GetFields()))
				ids = ids || fc.GetId() != ""
				confirms = confirms || fc.GetName() == builtin.RequestConfirmationName
			}
		case *agentrunnerv1.Part_FunctionResponse:
			if fr := d.FunctionResponse; fr != nil {
				n += len(fr.GetName()) + 4*(1+len(fr.GetResponse().GetFields()))
				ids = ids || fr.GetId() != ""
				confirms = confirms || fr.GetName() == builtin.RequestConfirmationName
			}
		}
	}
	return n, ids, confirms
}

// SummaryPrefix starts the content that stands, in a model request, for
// the events a compaction covers.
const SummaryPrefix = "Summary of the conversation so far:\n"

// withSummary returns events as the model sees them once compacted: the
// newest compaction's summary first, as a user-role content, then the
// events after its range. The runner loads only those (see the history
// cache); compaction events themselves carry no conversation and are left
// out. A session never compacted is returned as it is, without a copy.
func withSummary(events []*agentrunnerv1.Event) []*agentrunnerv1.Event {
	newest := -1
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].GetActions().GetCompaction() != nil {
			newest = i
			break
		}
	}
	if newest < 0 {
		return events
	}
	c := events[newest].GetActions().GetCompaction()
	kept := func(ev *agentrunnerv1.Event) bool {
		return ev.GetActions().GetCompaction() == nil && ev.GetSequence() > c.GetEndSequence()
	}
	// Counted first: this runs on every model call, and a long session's
	// history holds many more events than the compaction leaves.
	n := 1
	for _, ev := range events {
		if kept(ev) {
			n++
		}
	}
	out := make([]*agentrunnerv1.Event, 0, n)
	out = append(out, &agentrunnerv1.Event{
		Author:   agent.UserAuthor,
		Sequence: c.GetStartSequence(),
		Content:  &agentrunnerv1.Content{Role: agent.RoleUser, Parts: []*agentrunnerv1.Part{textPart(SummaryPrefix + contentText(c.GetSummary()))}},
	})
	for _, ev := range events {
		if kept(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// contentText joins the text parts of c, thoughts left out.
func contentText(c *agentrunnerv1.Content) string {
	var parts []string
	for _, p := range c.GetParts() {
		if t := p.GetText(); t != "" && !p.GetThought() {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// currentTurn returns the events of the current turn for an agent that
// includes no history: from the latest event by the user or by another
// agent that says something on. Events made only of function calls or
// responses do not start a turn: a transfer (another agent's call and its
// response) leads back to the user's message it answers, and a function
// response the client sent for a long-running call to the message that
// started the call, so the call and its response stay together. A late
// answer, one that came after other turns, brings back the turn of its
// call instead: that turn, then the events from the answer on, without
// the turns in between, so that the request ends with the call and its
// answer.
func currentTurn(self string, events []*agentrunnerv1.Event) []*agentrunnerv1.Event {
	i := turnStart(self, events)
	if i < 0 {
		return nil
	}
	call, answer := lateAnswer(events, i)
	if call < 0 {
		return events[i:]
	}
	// Shorter each time: the turn of the call ends at the call.
	head := currentTurn(self, events[:call+1])
	return append(slices.Clip(head), events[answer:]...)
}

// turnStart is the index of the event that starts the current turn, or -1.
func turnStart(self string, events []*agentrunnerv1.Event) int {
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if ev.GetPartial() || ev.GetAuthor() == self || len(ev.GetContent().GetParts()) == 0 || onlyFunctionParts(ev.GetContent()) {
			continue
		}
		return i
	}
	return -1
}

// lateAnswer finds, among events[start:], the first event that answers a
// call made before start: it returns the index of the earliest such call's
// event and of that answer, or -1, -1.
func lateAnswer(events []*agentrunnerv1.Event, start int) (call, answer int) {
	answered := map[string]int{} // call id -> index of the first answer
	for j := start; j < len(events); j++ {
		for _, p := range events[j].GetContent().GetParts() {
			if id := p.GetFunctionResponse().GetId(); id != "" {
				if _, ok := answered[id]; !ok {
					answered[id] = j
				}
			}
		}
	}
	call, answer = -1, -1
	if len(answered) == 0 {
		return call, answer
	}
	for j := start - 1; j >= 0; j-- {
		for _, p := range events[j].GetContent().GetParts() {
			if at, ok := answered[p.GetFunctionCall().GetId()]; ok && p.GetFunctionCall().GetId() != "" {
				call = j
				if answer < 0 || at < answer {
					answer = at
				}
			}
		}
	}
	return call, answer
}

func onlyFunctionParts(c *agentrunnerv1.Content) bool {
	for _, p := range c.GetParts() {
		if p.GetFunctionCall() == nil && p.GetFunctionResponse() == nil {
			return false
		}
	}
	return true
}

// pairFunctionResponses places the responses to each function call in one
// content right after the content that makes the calls, in call order, so
// that the model sees every call answered at once. This matters when the
// responses are apart from their calls: the response to a long-running
// call arrives in a later run, after an interim response. For a call
// answered more than once the latest response wins. Function calls and
// responses are paired by id; a call nobody answered (a long-running call
// the client abandoned) is left out, as is a response to a call not in the
// history, since the model rejects both. Parts without an id stay where
// they are.
//
// A late answer is the exception: when turns went on between a call and
// its latest response (a client answering a waiting call after other
// runs), the call leaves its place and comes, with its response, where
// the response arrived, as ADK arranges async function responses. Left
// next to its call, the answer would sit in the middle of the request,
// which would end with the model's own last turn and leave it nothing to
// answer; moved, the model's next turn is about the answer, and every
// later request reads the conversation in the order it happened.
func pairFunctionResponses(contents []*agentrunnerv1.Content) []*agentrunnerv1.Content {
	p := newPairing(contents)
	if len(p.callAt) == 0 {
		return dropIDResponses(contents)
	}
	out := make([]*agentrunnerv1.Content, 0, len(contents)+2)
	for i, c := range contents {
		if !hasIDFunctionParts(c) {
			out = append(out, c)
			continue
		}
		kept := make([]*agentrunnerv1.Part, 0, len(c.GetParts()))
		var answers []*agentrunnerv1.Part
		for _, part := range c.GetParts() {
			if id := part.GetFunctionCall().GetId(); id != "" {
				if r, ok := p.latest[id]; ok && !p.late(id) {
					kept = append(kept, part)
					answers = append(answers, r)
				}
				continue // unanswered, or placed where its late answer is
			}
			if part.GetFunctionResponse().GetId() != "" {
				continue // placed after its call, or answers nothing
			}
			kept = append(kept, part)
		}
		if len(kept) > 0 {
			out = append(out, &agentrunnerv1.Content{Role: c.GetRole(), Parts: kept})
		}
		if len(answers) > 0 {
			out = append(out, &agentrunnerv1.Content{Role: agent.RoleUser, Parts: answers})
		}
		out = p.appendLate(out, i)
	}
	return out
}

// pairing is what pairFunctionResponses knows of a history's calls.
type pairing struct {
	callAt   map[string]int                 // call id -> index of its (first) content
	latest   map[string]*agentrunnerv1.Part // call id -> its latest response
	latestAt map[string]int                 // call id -> index of that response's content
	// turns[k] counts the contents before k that are turns: anything but
	// contents of function responses only.
	turns []int
	// moved holds, by the index of the content with their latest
	// response, the late calls, in call order.
	moved map[int][]*agentrunnerv1.Part
}

func newPairing(contents []*agentrunnerv1.Content) pairing {
	p := pairing{callAt: map[string]int{}}
	for i, c := range contents {
		for _, part := range c.GetParts() {
			if id := part.GetFunctionCall().GetId(); id != "" {
				if _, ok := p.callAt[id]; !ok {
					p.callAt[id] = i
				}
			}
		}
	}
	if len(p.callAt) == 0 {
		return p
	}
	p.latest, p.latestAt = map[string]*agentrunnerv1.Part{}, map[string]int{}
	p.turns = make([]int, len(contents)+1)
	for i, c := range contents {
		p.turns[i+1] = p.turns[i]
		if !onlyFunctionResponses(c) {
			p.turns[i+1]++
		}
		for _, part := range c.GetParts() {
			if id := part.GetFunctionResponse().GetId(); id != "" {
				if at, ok := p.callAt[id]; ok && at < i {
					p.latest[id], p.latestAt[id] = part, i
				}
			}
		}
	}
	for id, at := range p.latestAt {
		if p.turns[at]-p.turns[p.callAt[id]+1] > 0 {
			p.moved = map[int][]*agentrunnerv1.Part{}
			break
		}
	}
	if p.moved != nil {
		// In content and part order, so that the moved calls keep theirs.
		for i, c := range contents {
			for _, part := range c.GetParts() {
				if id := part.GetFunctionCall().GetId(); id != "" && p.callAt[id] == i && p.late(id) {
					p.moved[p.latestAt[id]] = append(p.moved[p.latestAt[id]], part)
				}
			}
		}
	}
	return p
}

// late reports whether the answered call id had a turn (anything but
// function responses) between it and its latest response.
func (p pairing) late(id string) bool {
	at, ok := p.latestAt[id]
	return ok && p.turns[at]-p.turns[p.callAt[id]+1] > 0
}

// appendLate appends, after contents[i], the late calls whose latest
// response is in contents[i], then their responses in the same order: the
// request's end when contents[i] is the newest.
func (p pairing) appendLate(out []*agentrunnerv1.Content, i int) []*agentrunnerv1.Content {
	calls := p.moved[i]
	if len(calls) == 0 {
		return out
	}
	answers := make([]*agentrunnerv1.Part, len(calls))
	for k, call := range calls {
		answers[k] = p.latest[call.GetFunctionCall().GetId()]
	}
	return append(out,
		&agentrunnerv1.Content{Role: agent.RoleModel, Parts: calls},
		&agentrunnerv1.Content{Role: agent.RoleUser, Parts: answers})
}

func onlyFunctionResponses(c *agentrunnerv1.Content) bool {
	for _, part := range c.GetParts() {
		if part.GetFunctionResponse() == nil {
			return false
		}
	}
	return true
}

// dropIDResponses removes responses with ids from a history that has no
// calls with ids: they answer nothing the model can see.
func dropIDResponses(contents []*agentrunnerv1.Content) []*agentrunnerv1.Content {
	// The common history has no such responses: return it as it is rather
	// than copying it on every model call.
	if !slices.ContainsFunc(contents, hasIDFunctionParts) {
		return contents
	}
	out := make([]*agentrunnerv1.Content, 0, len(contents))
	for _, c := range contents {
		if !hasIDFunctionParts(c) {
			out = append(out, c)
			continue
		}
		var kept []*agentrunnerv1.Part
		for _, p := range c.GetParts() {
			if p.GetFunctionResponse().GetId() == "" {
				kept = append(kept, p)
			}
		}
		if len(kept) > 0 {
			out = append(out, &agentrunnerv1.Content{Role: c.GetRole(), Parts: kept})
		}
	}
	return out
}

func hasIDFunctionParts(c *agentrunnerv1.Content) bool {
	for _, p := range c.GetParts() {
		if p.GetFunctionCall().GetId() != "" || p.GetFunctionResponse().GetId() != "" {
			return true
		}
	}
	return false
}

// otherAgentContent rephrases another agent's turn as user-role context.
// The offline model recognises such contents by their first part, "For
// context:", so that text must not change.
func otherAgentContent(author string, c *agentrunnerv1.Content) *agentrunnerv1.Content {
	parts := []*agentrunnerv1.Part{textPart("For context:")}
	for _, p := range c.GetParts() {
		if p.GetThought() {
			continue
		}
		switch d := p.GetData().(type) {
		case *agentrunnerv1.Part_Text:
			if d.Text == "" {
				continue // a bare thought signature: nothing was said
			}
			parts = append(parts, textPart(fmt.Sprintf("[%s] said: %s", author, d.Text)))
		case *agentrunnerv1.Part_FunctionCall:
			parts = append(parts, textPart(fmt.Sprintf("[%s] called tool `%s` with parameters: %s", author, d.FunctionCall.GetName(), jsonOf(d.FunctionCall.GetArgs()))))
		case *agentrunnerv1.Part_FunctionResponse:
			parts = append(parts, textPart(fmt.Sprintf("[%s] `%s` tool returned result: %s", author, d.FunctionResponse.GetName(), jsonOf(d.FunctionResponse.GetResponse()))))
		default:
			parts = append(parts, p)
		}
	}
	if len(parts) == 1 {
		return nil
	}
	return &agentrunnerv1.Content{Role: agent.RoleUser, Parts: parts}
}

// jsonOf renders s as compact JSON with sorted keys. protojson is not used:
// its output is deliberately unstable, and the model's prompt (and so its
// cache) should not change from one build to the next.
func jsonOf(s *structpb.Struct) string {
	if s == nil {
		return "{}"
	}
	b, err := json.Marshal(s.AsMap())
	if err != nil {
		return "{}"
	}
	return string(b)
}

// withoutConfirmations returns c without the confirmation requests and
// their answers, which are between the agent and the caller: the model
// sees the call they are about, and its response once it ran. Contents
// without any are returned as they are.
func withoutConfirmations(c *agentrunnerv1.Content) *agentrunnerv1.Content {
	// This runs on every event of the history on every model call: look at
	// the parts' types before anything else.
	if !slices.ContainsFunc(c.GetParts(), isConfirmation) {
		return c
	}
	kept := slices.DeleteFunc(slices.Clone(c.GetParts()), isConfirmation)
	if len(kept) == 0 {
		return nil
	}
	return &agentrunnerv1.Content{Role: c.GetRole(), Parts: kept}
}

func isConfirmation(p *agentrunnerv1.Part) bool {
	switch d := p.Data.(type) {
	case *agentrunnerv1.Part_FunctionCall:
		return d.FunctionCall.GetName() == builtin.RequestConfirmationName
	case *agentrunnerv1.Part_FunctionResponse:
		return d.FunctionResponse.GetName() == builtin.RequestConfirmationName
	}
	return false
}
