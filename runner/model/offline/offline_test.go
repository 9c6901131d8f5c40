package offline

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

func collect(t *testing.T, seq iter.Seq2[*model.Response, error]) []*model.Response {
	t.Helper()
	var out []*model.Response
	for r, err := range seq {
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		out = append(out, r)
	}
	return out
}

func text(s string) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: s}}
}

func user(parts ...*agentrunnerv1.Part) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: "user", Parts: parts}
}

func modelTurn(parts ...*agentrunnerv1.Part) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: "model", Parts: parts}
}

// funcResponse and transferCall build parts of the package-level case
// tables, from literals: a value structpb refuses is a bug in the table,
// hence the panic.
func funcResponse(name string, resp map[string]any) *agentrunnerv1.Part {
	s, err := structpb.NewStruct(resp)
	if err != nil {
		panic(err)
	}
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: "c1", Name: name, Response: s}}}
}

// transferTool declares transfer_to_agent the way an LLM agent would, with
// the enum decoded from JSON ([]any).
func transferTool(agents ...string) *model.FunctionDeclaration {
	enum := make([]any, len(agents))
	for i, a := range agents {
		enum[i] = a
	}
	return &model.FunctionDeclaration{
		Name:        TransferTool,
		Description: "Transfer the question to another agent.",
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"agent_name": map[string]any{"type": "string", "enum": enum}},
			"required":   []any{"agent_name"},
		},
	}
}

func replyText(s string) *agentrunnerv1.Content {
	return modelTurn(text(s))
}

func transferCall(arg, agent string) *agentrunnerv1.Content {
	args, err := structpb.NewStruct(map[string]any{arg: agent})
	if err != nil {
		panic(err)
	}
	return modelTurn(&agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Name: TransferTool, Args: args}}})
}

func TestName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", "offline"},
		{"gemini-2.5-flash", "offline:gemini-2.5-flash"},
		{"offline", "offline"},
		{"offline:bench", "offline:bench"},
		{"offline-ish", "offline:offline-ish"},
	} {
		if got := New(Config{Name: tt.in}).Name(); got != tt.want {
			t.Errorf("New(%q).Name() = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// billing declares transfer_to_agent with billing and tech as targets.
var billing = transferTool("billing", "tech")

// answerCases are requests and the offline model's answer to each.
var answerCases = []struct {
	name string
	req  *model.Request
	want *agentrunnerv1.Content
}{
	{
		name: "echo",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{user(text("hello "), text("there"))}},
		want: replyText("offline model: you said: hello there"),
	},
	{
		name: "echo the last user message",
		req: &model.Request{Contents: []*agentrunnerv1.Content{
			user(text("first")), modelTurn(text("offline model: you said: first")), {Parts: []*agentrunnerv1.Part{text("second")}},
		}},
		want: replyText("offline model: you said: second"),
	},
	{
		name: "thoughts are not the user's words",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{user(&agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "hidden "}, Thought: true}, text("shown"))}},
		want: replyText("offline model: you said: shown"),
	},
	{
		name: "nothing to answer",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{nil, user()}},
		want: replyText("offline model: there is nothing to answer"),
	},
	{
		name: "only a model turn",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{modelTurn(text("hi"))}},
		want: replyText("offline model: there is nothing to answer"),
	},
	{
		name: "function response",
		req: &model.Request{Contents: []*agentrunnerv1.Content{
			user(text("weather?")),
			modelTurn(&agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: "c1", Name: "get_weather"}}}),
			user(funcResponse("get_weather", map[string]any{"sky": "clear", "temp": 21, "alerts": []any{}})),
		}},
		want: replyText(`offline model: get_weather returned {"alerts":[],"sky":"clear","temp":21}`),
	},
	{
		// 200 bytes of JSON: the 9-byte prefix and 95 two-byte runes,
		// cut on a rune boundary.
		name: "two function responses, long one cut",
		req: &model.Request{Contents: []*agentrunnerv1.Content{user(
			funcResponse("a", map[string]any{"error": "boom"}),
			funcResponse("b", map[string]any{"blob": strings.Repeat("é", 150)}),
		)}},
		want: replyText(`offline model: a returned {"error":"boom"}; b returned {"blob":"` + strings.Repeat("é", 95) + "…"),
	},
	{
		name: "function response wins over the transfer tool",
		req: &model.Request{
			Contents: []*agentrunnerv1.Content{user(text("billing please")), user(funcResponse("lookup", nil))},
			Tools:    []*model.FunctionDeclaration{billing},
		},
		want: replyText("offline model: lookup returned {}"),
	},
	{
		name: "transfer phrase",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{user(text("Please transfer me to the tech team"))}, Tools: []*model.FunctionDeclaration{billing}},
		want: transferCall("agent_name", "tech"),
	},
	{
		name: "transfer phrase, other case and punctuation",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{user(text("TRANSFER TO BILLING."))}, Tools: []*model.FunctionDeclaration{billing}},
		want: transferCall("agent_name", "billing"),
	},
	{
		name: "phrase wins over an earlier mention",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{user(text("not billing: transfer to tech"))}, Tools: []*model.FunctionDeclaration{billing}},
		want: transferCall("agent_name", "tech"),
	},
	{
		name: "mention",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{user(text("I have a billing question"))}, Tools: []*model.FunctionDeclaration{billing}},
		want: transferCall("agent_name", "billing"),
	},
	{
		name: "first mention wins",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{user(text("tech, or maybe billing?"))}, Tools: []*model.FunctionDeclaration{billing}},
		want: transferCall("agent_name", "tech"),
	},
	{
		name: "mention inside a word does not count",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{user(text("technology and rebilling"))}, Tools: []*model.FunctionDeclaration{billing}},
		want: replyText("offline model: you said: technology and rebilling"),
	},
	{
		name: "phrase naming an unknown agent",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{user(text("transfer to sales"))}, Tools: []*model.FunctionDeclaration{billing}},
		want: replyText("offline model: you said: transfer to sales"),
	},
	{
		name: "no transfer tool",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{user(text("transfer to billing"))}},
		want: replyText("offline model: you said: transfer to billing"),
	},
	{
		name: "tool without enum takes the phrase as is",
		req: &model.Request{Contents: []*agentrunnerv1.Content{user(text("transfer to helpdesk"))}, Tools: []*model.FunctionDeclaration{{
			Name: TransferTool, Parameters: map[string]any{"type": "object", "properties": map[string]any{"agent_name": map[string]any{"type": "string"}}},
		}}},
		want: transferCall("agent_name", "helpdesk"),
	},
	{
		name: "tool declared in Go with another argument name",
		req: &model.Request{Contents: []*agentrunnerv1.Content{user(text("ask tech"))}, Tools: []*model.FunctionDeclaration{
			{Name: "other"},
			{Name: TransferTool, Parameters: map[string]any{"properties": map[string]any{"target": map[string]any{"enum": []string{"tech"}}}}},
		}},
		want: transferCall("target", "tech"),
	},
	{
		// After a transfer the target agent sees the user's message and
		// then the transfer as context; it must answer, not transfer on.
		name: "user message followed by context does not transfer",
		req: &model.Request{
			Contents: []*agentrunnerv1.Content{
				user(text("tech or billing?")),
				user(text("For context:"), text("[triage] called tool `transfer_to_agent` with parameters: {\"agent_name\":\"billing\"}")),
				user(text("For context:"), text("[triage] `transfer_to_agent` tool returned result: {}")),
			},
			Tools: []*model.FunctionDeclaration{transferTool("tech", "triage")},
		},
		want: replyText("offline model: you said: tech or billing?"),
	},
	{
		name: "text naming the tool does not transfer",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{user(text("[triage] called transfer_to_agent for tech"))}, Tools: []*model.FunctionDeclaration{billing}},
		want: replyText("offline model: you said: [triage] called transfer_to_agent for tech"),
	},
	{
		name: "use a declared tool, with arguments",
		req: &model.Request{Tools: []*model.FunctionDeclaration{{Name: "get_order"}}, Contents: []*agentrunnerv1.Content{
			user(text(`please call get_order {"order_id": "42"}`)),
		}},
		want: modelTurn(&agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{
			Name: "get_order", Args: &structpb.Struct{Fields: map[string]*structpb.Value{"order_id": structpb.NewStringValue("42")}}}}}),
	},
	{
		name: "use a declared tool, no arguments",
		req:  &model.Request{Tools: []*model.FunctionDeclaration{{Name: "ping"}}, Contents: []*agentrunnerv1.Content{user(text("use ping"))}},
		want: modelTurn(&agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{
			Name: "ping", Args: &structpb.Struct{Fields: map[string]*structpb.Value{}}}}}),
	},
	{
		name: "a tool the request does not declare is not called",
		req:  &model.Request{Contents: []*agentrunnerv1.Content{user(text("use ping"))}},
		want: replyText("offline model: you said: use ping"),
	},
}

// TestAnswer covers what the model answers, unary.
func TestAnswer(t *testing.T) {
	for _, tt := range answerCases {
		t.Run(tt.name, func(t *testing.T) {
			got := collect(t, New(Config{}).Generate(t.Context(), tt.req, false))
			if len(got) != 1 {
				t.Fatalf("got %d responses, want 1", len(got))
			}
			r := got[0]
			if !proto.Equal(r.Content, tt.want) {
				t.Errorf("content:\n%s\nwant:\n%s", prototext.Format(r.Content), prototext.Format(tt.want))
			}
			if r.Partial || !r.TurnComplete || r.FinishReason != "STOP" || r.ErrorCode != "" || r.ModelVersion != "offline" || r.Usage == nil {
				t.Errorf("response %+v, want complete, STOP, no error, version offline, usage", r)
			}
			// Same request, same answer.
			again := collect(t, New(Config{}).Generate(t.Context(), tt.req, false))
			if !proto.Equal(again[0].Content, r.Content) || !proto.Equal(again[0].Usage, r.Usage) {
				t.Error("a second call answered differently")
			}
		})
	}
}

func TestUsageAndVersion(t *testing.T) {
	req := &model.Request{
		Model:             "gemini-x",
		SystemInstruction: "be kind",
		Contents:          []*agentrunnerv1.Content{user(text("one two three"))},
	}
	r := collect(t, New(Config{Name: "gemini-default"}).Generate(t.Context(), req, false))[0]
	// "offline model: you said: one two three" is 7 words.
	want := &agentrunnerv1.UsageMetadata{PromptTokenCount: 5, CandidatesTokenCount: 7, TotalTokenCount: 12}
	if !proto.Equal(r.Usage, want) {
		t.Errorf("usage {%s}, want {%s}", prototext.Format(r.Usage), prototext.Format(want))
	}
	if r.ModelVersion != "offline:gemini-x" {
		t.Errorf("ModelVersion %q, want offline:gemini-x (the request's model)", r.ModelVersion)
	}
}

// TestStream checks the partials of a streamed answer and that they join
// into the complete response.
func TestStream(t *testing.T) {
	echo := &model.Request{Contents: []*agentrunnerv1.Content{user(text("  a  b"))}}
	tests := []struct {
		name     string
		cfg      Config
		req      *model.Request
		partials []string
		final    *agentrunnerv1.Content
	}{
		{
			name:     "word by word",
			req:      echo,
			partials: []string{"offline ", "model: ", "you ", "said:   ", "a  ", "b"},
			final:    replyText("offline model: you said:   a  b"),
		},
		{
			name:     "fixed chunk count",
			cfg:      Config{Chunks: 3},
			req:      echo,
			partials: []string{"offline mo", "del: you s", "aid:   a  b"}, // 31 runes: 10, 10, 11
			final:    replyText("offline model: you said:   a  b"),
		},
		{
			name:  "a transfer is not streamed",
			req:   &model.Request{Contents: []*agentrunnerv1.Content{user(text("transfer to tech"))}, Tools: []*model.FunctionDeclaration{transferTool("tech")}},
			final: transferCall("agent_name", "tech"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := collect(t, New(tt.cfg).Generate(t.Context(), tt.req, true))
			if len(got) == 0 {
				t.Fatal("no responses")
			}
			final := got[len(got)-1]
			if final.Partial || !final.TurnComplete {
				t.Errorf("last response partial=%v complete=%v", final.Partial, final.TurnComplete)
			}
			var joined strings.Builder
			var partials []string
			for _, r := range got[:len(got)-1] {
				if !r.Partial || r.TurnComplete || r.Usage != nil {
					t.Errorf("partial response %+v", r)
				}
				s := r.Content.GetParts()[0].GetText()
				partials = append(partials, s)
				joined.WriteString(s)
			}
			if tt.final != nil {
				if fmt.Sprint(partials) != fmt.Sprint(tt.partials) {
					t.Errorf("partials %q, want %q", partials, tt.partials)
				}
				if !proto.Equal(final.Content, tt.final) {
					t.Errorf("final %s, want %s", prototext.Format(final.Content), prototext.Format(tt.final))
				}
			}
			if len(partials) > 0 && joined.String() != final.Content.GetParts()[0].GetText() {
				t.Errorf("partials join to %q, final text is %q", joined.String(), final.Content.GetParts()[0].GetText())
			}
		})
	}
}

// TestStreamManyChunks checks that Chunks is honoured even past the answer's
// length, as load benchmarks ask for.
func TestStreamManyChunks(t *testing.T) {
	const n = 100
	got := collect(t, New(Config{Chunks: n}).Generate(t.Context(), &model.Request{Contents: []*agentrunnerv1.Content{user(text("hi"))}}, true))
	if len(got) != n+1 {
		t.Fatalf("got %d responses, want %d partials and one complete", len(got), n)
	}
	var joined strings.Builder
	for _, r := range got[:n] {
		s := r.Content.GetParts()[0].GetText()
		if s == "" {
			t.Error("empty partial")
		}
		joined.WriteString(s)
	}
	final := got[n].Content.GetParts()[0].GetText()
	if joined.String() != final || !strings.HasPrefix(final, "offline model: you said: hi.") {
		t.Errorf("partials join to %q, final %q", joined.String(), final)
	}
}

func TestCancel(t *testing.T) {
	req := &model.Request{Contents: []*agentrunnerv1.Content{user(text("one two three"))}}
	t.Run("before the call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		for _, stream := range []bool{false, true} {
			var n int
			var gotErr error
			for r, err := range New(Config{}).Generate(ctx, req, stream) {
				if err != nil {
					gotErr = err
					break
				}
				n++
				_ = r
			}
			if n != 0 || !errors.Is(gotErr, context.Canceled) {
				t.Errorf("stream=%v: %d responses, error %v; want none and context.Canceled", stream, n, gotErr)
			}
		}
	})
	t.Run("mid-stream", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var n int
		var gotErr error
		for _, err := range New(Config{}).Generate(ctx, req, true) {
			if err != nil {
				gotErr = err
				break
			}
			n++
			cancel()
		}
		if n != 1 || !errors.Is(gotErr, context.Canceled) {
			t.Errorf("%d responses, error %v; want 1 and context.Canceled", n, gotErr)
		}
	})
	t.Run("during a long delay", func(t *testing.T) {
		// Whether cancel lands before or during the hour-long wait, the
		// call must end with context.Canceled; if the wait ignored ctx the
		// test would hang.
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			var gotErr error
			for _, err := range New(Config{ChunkDelay: time.Hour}).Generate(ctx, req, false) {
				gotErr = err
			}
			done <- gotErr
		}()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
	})
}

// TestDelayKeepsOutput checks that a delay changes nothing in what is
// answered.
func TestDelayKeepsOutput(t *testing.T) {
	req := &model.Request{Contents: []*agentrunnerv1.Content{user(text("a b"))}}
	plain := collect(t, New(Config{}).Generate(t.Context(), req, true))
	delayed := collect(t, New(Config{ChunkDelay: time.Microsecond}).Generate(t.Context(), req, true))
	if len(plain) != len(delayed) {
		t.Fatalf("%d responses with a delay, %d without", len(delayed), len(plain))
	}
	for i := range plain {
		if !proto.Equal(plain[i].Content, delayed[i].Content) || plain[i].Partial != delayed[i].Partial {
			t.Errorf("response %d differs with a delay", i)
		}
	}
}

// TestFirstChunkDelay checks that the first response waits
// FirstChunkDelay and each later one ChunkDelay. Only lower bounds are
// checked: a busy machine may be slower, never faster.
func TestFirstChunkDelay(t *testing.T) {
	const first, each = 150 * time.Millisecond, 30 * time.Millisecond
	req := &model.Request{Contents: []*agentrunnerv1.Content{user(text("a b c"))}}
	for _, stream := range []bool{true, false} {
		start := time.Now()
		var at []time.Duration
		for _, err := range New(Config{FirstChunkDelay: first, ChunkDelay: each}).Generate(t.Context(), req, stream) {
			if err != nil {
				t.Fatal(err)
			}
			at = append(at, time.Since(start))
		}
		if len(at) == 0 || at[0] < first {
			t.Fatalf("stream=%v: first response after %v, want at least %v", stream, at, first)
		}
		for i := 1; i < len(at); i++ {
			if gap := at[i] - at[i-1]; gap < each {
				t.Errorf("stream=%v: response %d came %v after the one before, want at least %v", stream, i, gap, each)
			}
		}
	}
}

// TestEarlyStop checks that the model stops when the consumer does (a
// range-over-func iterator that yields after false panics).
func TestEarlyStop(t *testing.T) {
	req := &model.Request{Contents: []*agentrunnerv1.Content{user(text("a b c d"))}}
	n := 0
	for range New(Config{}).Generate(t.Context(), req, true) {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("got %d responses, want 2", n)
	}
}

func TestNilRequest(t *testing.T) {
	for _, err := range New(Config{}).Generate(t.Context(), nil, false) {
		if err == nil {
			t.Error("no error for a nil request")
		}
	}
}

// BenchmarkGenerateStream measures the model's own cost per streamed answer,
// the floor under load benchmarks that use it.
func BenchmarkGenerateStream(b *testing.B) {
	m := New(Config{Chunks: 16})
	req := &model.Request{
		Contents: []*agentrunnerv1.Content{user(text("what is my balance? I have a billing question"))},
		Tools:    []*model.FunctionDeclaration{transferTool("tech")},
	}
	for b.Loop() {
		for _, err := range m.Generate(b.Context(), req, true) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// wordWithSpace is the regular expression splitWords replaced: a word with
// the spaces after it, the first match taking any leading spaces too.
var wordWithSpace = regexp.MustCompile(`^\s*\S+\s*|\S+\s*`)

func splitWordsRegexp(s string) []string {
	pieces := wordWithSpace.FindAllString(s, -1)
	if len(pieces) == 0 {
		return []string{s}
	}
	return pieces
}

// FuzzSplitWords: splitWords cuts every text as the regular expression did.
func FuzzSplitWords(f *testing.F) {
	for _, s := range []string{"", " ", "a", "  a b ", "one two\tthree\nfour\r\n", "\v x \f y", "héllo wörld ", "\xff\xfe a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := splitWords(s), splitWordsRegexp(s)
		if !slices.Equal(got, want) {
			t.Fatalf("splitWords(%q) = %q, want %q", s, got, want)
		}
	})
}

func BenchmarkSplitWords(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 25)
	b.Run("bytes", func(b *testing.B) {
		for b.Loop() {
			splitWords(text)
		}
	})
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			splitWordsRegexp(text)
		}
	})
}
