// Package offline is a deterministic stand-in for a language model. It needs
// no network and no credentials: the demo app uses it when no Gemini
// credentials are set, and load benchmarks use it so that they measure the
// service rather than a model. Its answers say that they come from the
// offline model, so nobody mistakes them for a real one.
//
// The answer depends only on the request, never on randomness or a clock:
//
//   - If the last content holds function responses, the answer summarises
//     them: "offline model: get_weather returned {"sky":"clear"}".
//   - Else, if the request declares the transfer_to_agent tool, the user's
//     message is the latest turn, and it says "transfer to <agent>" (or
//     "transfer me to <agent>") or names an agent listed in the tool's enum,
//     the answer is a function call to transfer_to_agent with that agent.
//     An explicit phrase wins over a mention; among mentions the first in
//     the text wins.
//   - Else, if the user's message is the latest turn and says "use <tool>"
//     or "call <tool>" for a tool the request declares (any but
//     transfer_to_agent), the answer calls that tool, with the JSON object
//     that follows the name as its arguments ("call get_order
//     {"order_id": "42"}"), or none.
//   - Otherwise it echoes the user's last message:
//     "offline model: you said: <text>".
//
// "The user's message" is the last user-role content with text that is not
// another agent's turn rephrased as context (a content whose first part is
// "For context:", as the LLM agent builds them). So an agent that was just
// transferred to echoes the user's message instead of transferring again.
//
// Streaming yields the answer text word by word (or in Config.Chunks pieces)
// as partial responses, then one complete response with the whole text. A
// function call is never streamed: it comes only in the complete response.
//
// Imports: model and the generated messages. It must not import the
// runner, agents, tools, plugins, store or gRPC (runner/deps_test.go
// checks).
package offline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

const (
	// DefaultName is the name of an offline model configured without one.
	DefaultName = "offline"
	// TransferTool is the tool the offline model calls to hand the
	// conversation to another agent.
	TransferTool = "transfer_to_agent"
	// ReplyPrefix starts every text answer.
	ReplyPrefix = "offline model: "

	// transferArg is the argument of TransferTool naming the target, when
	// the declaration does not say otherwise.
	transferArg = "agent_name"
	// contextMarker opens another agent's turn rephrased for this one.
	contextMarker = "For context:"
	// maxSummary bounds a function response summary, in bytes of JSON.
	maxSummary = 200
	// padding fills a short answer up to Config.Chunks runes.
	padding = "."
)

// Config configures an offline model. The zero value is ready to use.
type Config struct {
	// Name is the model this one stands in for, for example
	// "gemini-2.5-flash". Name() reports it as "offline:gemini-2.5-flash".
	// Empty means DefaultName.
	Name string
	// ChunkDelay is waited before each response is yielded: each partial
	// and the complete response of a stream, and the single response of a
	// unary call. It stands in for model latency in benchmarks; zero (the
	// default) means no wait. The wait ends early when ctx is cancelled.
	ChunkDelay time.Duration
	// FirstChunkDelay, when positive, is waited before the first response
	// of a call instead of ChunkDelay: a real model's time to first token,
	// which the apps file sets so that a demo's runs last long enough to
	// cancel or attach to.
	FirstChunkDelay time.Duration
	// Chunks, when positive, is how many partial responses a streamed text
	// answer is split into, in pieces of nearly equal rune counts. An
	// answer shorter than Chunks runes is padded with "." so that every
	// piece holds text. Zero streams word by word.
	Chunks int
}

// Model is the offline model. It is safe for concurrent use.
type Model struct {
	name   string
	delay  time.Duration
	first  time.Duration
	chunks int
}

var _ model.Model = (*Model)(nil)

// New returns an offline model.
func New(cfg Config) *Model {
	first := cfg.FirstChunkDelay
	if first <= 0 {
		first = cfg.ChunkDelay
	}
	return &Model{name: offlineName(cfg.Name), delay: cfg.ChunkDelay, first: first, chunks: max(cfg.Chunks, 0)}
}

// offlineName marks name as offline, unless it already is.
func offlineName(name string) string {
	switch {
	case name == "":
		return DefaultName
	case name == DefaultName || strings.HasPrefix(name, DefaultName+":"):
		return name
	default:
		return DefaultName + ":" + name
	}
}

// Name returns the model name, "offline" or "offline:<configured name>".
func (m *Model) Name() string { return m.name }

// Generate answers req; see the package documentation for what it answers.
func (m *Model) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if req == nil {
			yield(nil, errors.New("offline model: nil request"))
			return
		}
		version := m.name
		if req.Model != "" {
			version = offlineName(req.Model)
		}
		content, err := answer(req)
		if err != nil {
			yield(nil, fmt.Errorf("offline model: %w", err))
			return
		}
		// The complete response is made once it is due: a paced answer
		// holds only its text while it waits.
		finalContent := content
		var p pacer
		defer p.stop()
		delay := m.first
		if stream {
			if text, ok := onlyText(content); ok {
				var pieces []string
				if m.chunks > 0 {
					text, pieces = splitN(text, m.chunks)
					finalContent = nil
				} else {
					pieces = splitWords(text)
				}
				for _, piece := range pieces {
					if err := p.wait(ctx, delay); err != nil {
						yield(nil, err)
						return
					}
					if !yield(&model.Response{Content: textContent(piece), Partial: true, ModelVersion: version}, nil) {
						return
					}
					delay = m.delay
				}
				if finalContent == nil {
					finalContent = textContent(text)
				}
			}
		}
		if err := p.wait(ctx, delay); err != nil {
			yield(nil, err)
			return
		}
		yield(&model.Response{
			Content:      finalContent,
			TurnComplete: true,
			FinishReason: "STOP",
			Usage:        usage(req, content),
			ModelVersion: version,
		}, nil)
	}
}

// pacer makes a call's waits on one timer: a paced answer waits before
// each of its chunks.
type pacer struct{ t *time.Timer }

func (p *pacer) stop() {
	if p.t != nil {
		p.t.Stop()
	}
}

// wait waits delay, and reports ctx's error if it is done.
func (p *pacer) wait(ctx context.Context, delay time.Duration) error {
	if delay > 0 {
		if p.t == nil {
			p.t = time.NewTimer(delay)
		} else {
			// The timer fired and was read, or was stopped: since Go
			// 1.23 Reset needs no drain.
			p.t.Reset(delay)
		}
		select {
		case <-ctx.Done():
		case <-p.t.C:
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("offline model: %w", err)
	}
	return nil
}

// answer decides the model's turn.
func answer(req *model.Request) (*agentrunnerv1.Content, error) {
	last := -1
	for i, c := range slices.Backward(req.Contents) {
		if len(c.GetParts()) > 0 {
			last = i
			break
		}
	}
	if last < 0 {
		return textContent(ReplyPrefix + "there is nothing to answer"), nil
	}
	if s := summariseResponses(req.Contents[last]); s != "" {
		return textContent(ReplyPrefix + s), nil
	}
	userAt, userText := lastUserText(req.Contents)
	if userAt < 0 {
		return textContent(ReplyPrefix + "there is nothing to answer"), nil
	}
	if userAt == last {
		if call := toolCall(req.Tools, userText); call != nil {
			return &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{
				Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: call},
			}}}, nil
		}
	}
	// Only the user's newest message may trigger a transfer, and never text
	// that names the tool itself: such text reports a transfer that already
	// happened, and acting on it again would bounce between agents.
	if userAt == last && !strings.Contains(userText, TransferTool) {
		if decl := findTool(req.Tools, TransferTool); decl != nil {
			arg, targets := transferTargets(decl)
			if target := pickTarget(userText, targets); target != "" {
				args, err := structpb.NewStruct(map[string]any{arg: target})
				if err != nil {
					return nil, fmt.Errorf("transfer args: %w", err)
				}
				return &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{
					Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Name: TransferTool, Args: args}},
				}}}, nil
			}
		}
	}
	return textContent(ReplyPrefix + "you said: " + userText), nil
}

// summariseResponses describes the function responses in c, or returns ""
// when it has none.
func summariseResponses(c *agentrunnerv1.Content) string {
	var out []string
	for _, p := range c.GetParts() {
		fr := p.GetFunctionResponse()
		if fr == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s returned %s", fr.GetName(), compactJSON(fr.GetResponse())))
	}
	return strings.Join(out, "; ")
}

// compactJSON renders s with sorted keys (encoding/json sorts map keys, so
// the text is stable, unlike protojson's), cut to maxSummary bytes.
func compactJSON(s *structpb.Struct) string {
	if s == nil {
		return "{}"
	}
	b, err := json.Marshal(s.AsMap())
	if err != nil {
		return "{}"
	}
	if len(b) <= maxSummary {
		return string(b)
	}
	cut := maxSummary
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "…"
}

// lastUserText returns the index and text of the user's last message, or
// -1 when there is none.
func lastUserText(contents []*agentrunnerv1.Content) (int, string) {
	for i, c := range slices.Backward(contents) {
		if c == nil || (c.GetRole() != "user" && c.GetRole() != "") || isContext(c) {
			continue
		}
		if t := textOf(c); strings.TrimSpace(t) != "" {
			return i, t
		}
	}
	return -1, ""
}

func isContext(c *agentrunnerv1.Content) bool {
	parts := c.GetParts()
	return len(parts) > 0 && strings.TrimSpace(parts[0].GetText()) == contextMarker
}

// textOf joins the answer (non-thought) text parts of c.
func textOf(c *agentrunnerv1.Content) string {
	var sb strings.Builder
	for _, p := range c.GetParts() {
		if t, ok := p.GetData().(*agentrunnerv1.Part_Text); ok && !p.GetThought() {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}

func findTool(tools []*model.FunctionDeclaration, name string) *model.FunctionDeclaration {
	for _, t := range tools {
		if t != nil && t.Name == name {
			return t
		}
	}
	return nil
}

// transferTargets reads the declaration's parameter schema: the argument
// that names the agent and the agents it may name (its enum). It prefers
// agent_name, else the first property in name order that has an enum.
func transferTargets(decl *model.FunctionDeclaration) (arg string, targets []string) {
	props, _ := decl.Parameters["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	if _, ok := props[transferArg]; ok {
		names = append([]string{transferArg}, names...)
	}
	for _, k := range names {
		schema, _ := props[k].(map[string]any)
		if enum := stringList(schema["enum"]); len(enum) > 0 {
			return k, enum
		}
	}
	if len(names) > 0 {
		return names[0], nil
	}
	return transferArg, nil
}

// stringList accepts an enum as decoded JSON ([]any) or as built in Go
// ([]string).
func stringList(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		var out []string
		for _, e := range l {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

var (
	transferPhrase = regexp.MustCompile(`(?i)\btransfer\s+(?:me\s+)?to\s+(?:the\s+)?([\w-]+)`)
	word           = regexp.MustCompile(`[\w-]+`)
)

// pickTarget returns the agent the text asks for, or "". With a known list
// of targets only those count, in their declared spelling; without one, an
// explicit "transfer to X" is taken as is.
func pickTarget(text string, targets []string) string {
	match := func(w string) string {
		for _, t := range targets {
			if strings.EqualFold(t, w) {
				return t
			}
		}
		return ""
	}
	if m := transferPhrase.FindStringSubmatch(text); m != nil {
		if len(targets) == 0 {
			return m[1]
		}
		if t := match(m[1]); t != "" {
			return t
		}
	}
	for _, w := range word.FindAllString(text, -1) {
		if t := match(w); t != "" {
			return t
		}
	}
	return ""
}

func textContent(s string) *agentrunnerv1.Content {
	// The part, its text and the parts' array are one allocation instead
	// of three: a streamed answer makes one content a word. The content
	// and the response stay apart: a run keeps the parts it streamed
	// until its complete event (turn's spoke), and they are the size they
	// were apart, not more.
	c := &struct {
		part  agentrunnerv1.Part
		text  agentrunnerv1.Part_Text
		parts [1]*agentrunnerv1.Part
	}{}
	c.text.Text = s
	c.part.Data = &c.text
	c.parts[0] = &c.part
	return &agentrunnerv1.Content{Role: "model", Parts: c.parts[:]}
}

// onlyText returns the text of a content made of one text part.
func onlyText(c *agentrunnerv1.Content) (string, bool) {
	if len(c.GetParts()) != 1 {
		return "", false
	}
	t, ok := c.Parts[0].GetData().(*agentrunnerv1.Part_Text)
	if !ok {
		return "", false
	}
	return t.Text, true
}

// splitWords cuts s into words, each with the spaces that follow it, so
// that the pieces join back into s; spaces that start s go with the first
// word. A space is one of RE2's \s: tab, newline, form feed, carriage
// return, space. It runs once per streamed answer, byte by byte
// (BenchmarkSplitWords compares it with the regular expression it
// replaces, which FuzzSplitWords checks it against).
func splitWords(s string) []string {
	pieces := make([]string, 0, len(s)/6+1)
	for i := 0; i < len(s); {
		start := i
		if start == 0 {
			for i < len(s) && isSpace(s[i]) {
				i++
			}
		}
		j := i
		for j < len(s) && !isSpace(s[j]) {
			j++
		}
		if j == i {
			break // s is all spaces
		}
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		pieces = append(pieces, s[start:j])
		i = j
	}
	if len(pieces) == 0 {
		return []string{s}
	}
	return pieces
}

// isSpace reports whether b is a space as RE2's \s means it.
func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\f' || b == '\r'
}

// splitN cuts s into n pieces of nearly equal rune counts, padding s first
// if it has fewer than n runes. It returns the (padded) text and the pieces.
func splitN(s string, n int) (string, []string) {
	runes := []rune(s)
	if len(runes) < n {
		runes = append(runes, []rune(strings.Repeat(padding, n-len(runes)))...)
	}
	pieces := make([]string, 0, n)
	for i := range n {
		pieces = append(pieces, string(runes[i*len(runes)/n:(i+1)*len(runes)/n]))
	}
	return string(runes), pieces
}

// usage estimates tokens: the answer's words, and a quarter of the
// prompt's text bytes (the usual rule of thumb). Deterministic, and cheap:
// it runs for every answer over the whole request, so it only sums
// lengths.
func usage(req *model.Request, answer *agentrunnerv1.Content) *agentrunnerv1.UsageMetadata {
	promptBytes := len(req.SystemInstruction)
	for _, c := range req.Contents {
		for _, p := range c.GetParts() {
			if t, ok := p.GetData().(*agentrunnerv1.Part_Text); ok {
				promptBytes += len(t.Text)
			}
		}
	}
	prompt := (promptBytes + 3) / 4
	var candidates int
	for _, p := range answer.GetParts() {
		if fc := p.GetFunctionCall(); fc != nil {
			candidates += 1 + len(fc.GetArgs().GetFields())
		}
	}
	candidates += len(strings.Fields(textOf(answer)))
	return &agentrunnerv1.UsageMetadata{
		PromptTokenCount:     int32(prompt),
		CandidatesTokenCount: int32(candidates),
		TotalTokenCount:      int32(prompt + candidates),
	}
}

// callPhrase is "use <tool>" or "call <tool>", optionally followed by the
// arguments as a JSON object.
var callPhrase = regexp.MustCompile(`(?i)\b(?:use|call)\s+([A-Za-z_][\w.-]*)\s*(\{.*\})?`)

// toolCall returns the call the user's message asks for with "use <tool>"
// or "call <tool> {json args}", when the request declares that tool (any
// but transfer_to_agent), or nil. Arguments that are not a JSON object are
// passed as they are under "input", for the tool to refuse.
func toolCall(tools []*model.FunctionDeclaration, text string) *agentrunnerv1.FunctionCall {
	// The phrase is looked for only when there is a tool to call: the
	// regular expression costs more than the rest of an answer.
	if !slices.ContainsFunc(tools, func(d *model.FunctionDeclaration) bool { return d.Name != TransferTool }) {
		return nil
	}
	m := callPhrase.FindStringSubmatch(text)
	if m == nil || m[1] == TransferTool || findTool(tools, m[1]) == nil {
		return nil
	}
	args := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	if m[2] != "" {
		var decoded map[string]any
		if err := json.Unmarshal([]byte(m[2]), &decoded); err != nil {
			decoded = map[string]any{"input": m[2]}
		}
		if s, err := structpb.NewStruct(decoded); err == nil {
			args = s
		}
	}
	return &agentrunnerv1.FunctionCall{Name: m[1], Args: args}
}
