package main

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"time"

	"google.golang.org/adk/model"
	"google.golang.org/genai"
)

// replyPrefix starts every answer, as in agentrunner's offline model
// (runner/model/offline), whose echo this model mirrors.
const replyPrefix = "offline model: "

// echoModel is a zero-latency model.LLM that answers as agentrunner's
// offline model answers a plain text message: "offline model: you said:
// <the user's last message>", streamed word by word as partial responses
// and then once whole, with usage counted the same way. It mirrors only
// that branch (no tool calls, no transfers): the bench's messages are plain
// text, and so is the bench app of either server.
//
// With pace set it answers at a real model's pace, as agentrunner's
// offline model with first_chunk_delay, chunk_delay and chunks does: a
// streamed answer is cut into pace.chunks pieces of nearly equal rune
// counts, the first after pace.first and each later one (the whole
// answer last) pace.gap after the one before.
type echoModel struct {
	name string
	pace pace
}

// pace is a model's delays; the zero value answers at once.
type pace struct {
	first, gap time.Duration
	chunks     int
}

var _ model.LLM = echoModel{}

func (m echoModel) Name() string { return m.name }

// GenerateContent answers req at once; see echoModel.
func (m echoModel) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if req == nil {
			yield(nil, errors.New("echo model: nil request"))
			return
		}
		text := replyPrefix + "there is nothing to answer"
		if user := lastUserText(req.Contents); user != "" {
			text = replyPrefix + "you said: " + user
		}
		delay := m.pace.first
		if stream {
			pieces := splitWords(text)
			if m.pace.chunks > 0 {
				text, pieces = splitN(text, m.pace.chunks)
			}
			for _, w := range pieces {
				if err := wait(ctx, delay); err != nil {
					yield(nil, err)
					return
				}
				if !yield(&model.LLMResponse{Content: genai.NewContentFromText(w, genai.RoleModel), Partial: true, ModelVersion: m.name}, nil) {
					return
				}
				delay = m.pace.gap
			}
		}
		if err := wait(ctx, delay); err != nil {
			yield(nil, err)
			return
		}
		yield(&model.LLMResponse{
			Content:       genai.NewContentFromText(text, genai.RoleModel),
			TurnComplete:  true,
			FinishReason:  genai.FinishReasonStop,
			UsageMetadata: usage(req, text),
			ModelVersion:  m.name,
		}, nil)
	}
}

// lastUserText is the text of the last user content that has any.
func lastUserText(contents []*genai.Content) string {
	for _, c := range slices.Backward(contents) {
		if c == nil || (c.Role != genai.RoleUser && c.Role != "") {
			continue
		}
		if t := textOf(c); strings.TrimSpace(t) != "" {
			return t
		}
	}
	return ""
}

func textOf(c *genai.Content) string {
	var b strings.Builder
	for _, p := range c.Parts {
		if p != nil {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// usage counts tokens as the offline model does: a quarter of the prompt's
// text bytes (rounded up), and one per word of the answer.
func usage(req *model.LLMRequest, answer string) *genai.GenerateContentResponseUsageMetadata {
	promptBytes := 0
	if req.Config != nil && req.Config.SystemInstruction != nil {
		promptBytes += len(textOf(req.Config.SystemInstruction))
	}
	for _, c := range req.Contents {
		if c != nil {
			promptBytes += len(textOf(c))
		}
	}
	prompt := int32((promptBytes + 3) / 4)
	candidates := int32(len(strings.Fields(answer)))
	return &genai.GenerateContentResponseUsageMetadata{
		PromptTokenCount:     prompt,
		CandidatesTokenCount: candidates,
		TotalTokenCount:      prompt + candidates,
	}
}

// splitWords is the offline model's streaming split (runner/model/offline,
// copied: this module does not import agentrunner): each word with the
// spaces that follow it, the first with those before it too, cut byte by
// byte as agentrunner's is, so that both sides pay the same for it.
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

// splitN is the offline model's cut into n pieces (runner/model/offline,
// copied): the text padded with "." to n runes at least, and its runes
// in n pieces of nearly equal counts.
func splitN(s string, n int) (string, []string) {
	runes := []rune(s)
	if len(runes) < n {
		runes = append(runes, []rune(strings.Repeat(".", n-len(runes)))...)
	}
	pieces := make([]string, 0, n)
	for i := range n {
		pieces = append(pieces, string(runes[i*len(runes)/n:(i+1)*len(runes)/n]))
	}
	return string(runes), pieces
}

// wait waits delay (none when it is not positive), and reports ctx's
// error if it is done.
func wait(ctx context.Context, delay time.Duration) error {
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	return ctx.Err()
}
