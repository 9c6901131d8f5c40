package eval

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// ModelJudge scores rubric_based_final_response_quality_v1 the way ADK's
// RubricBasedEvaluator does: the judge model reads the user's message, the
// agent's final response and the rubrics, and answers, per rubric, lines
// "Property: <the rubric's text>", "Rationale: ..." and "Verdict: yes|no".
// A verdict containing "yes" scores 1, else one containing "no" 0, else
// none; properties are matched to rubrics by their text, lowercased and
// trimmed. With NumSamples > 1 the model is asked that many times and each
// rubric takes the majority verdict (a tie is no). The turn's score is the
// mean of its rubrics' scores. The prompt is this package's own, not ADK's.
type ModelJudge struct {
	// Model returns the judge model named by a criterion's judge_model: a
	// model of the apps file.
	Model func(ctx context.Context, name string) (model.Model, error)
}

// ErrNoVerdict is a judge answer from which no rubric could be scored.
var ErrNoVerdict = errors.New("the judge model gave no verdict on any rubric")

// Judge implements Judge.
func (j ModelJudge) Judge(ctx context.Context, c Criterion, actual, expected Invocation) (float64, error) {
	m, err := j.Model(ctx, c.JudgeModel)
	if err != nil {
		return 0, fmt.Errorf("judge model %q: %w", c.JudgeModel, err)
	}
	prompt := judgePrompt(c.Rubrics, expected.UserContent.Text(), actual.FinalResponse.Text())
	votes := make(map[string][2]int, len(c.Rubrics)) // rubric id -> (yes, no)
	for range max(c.NumSamples, 1) {
		text, err := generateText(ctx, m, prompt)
		if err != nil {
			return 0, fmt.Errorf("judge model %q: %w", c.JudgeModel, err)
		}
		for id, v := range ParseVerdicts(text, c.Rubrics) {
			n := votes[id]
			if v {
				n[0]++
			} else {
				n[1]++
			}
			votes[id] = n
		}
	}
	if len(votes) == 0 {
		return 0, ErrNoVerdict
	}
	yes := 0
	for _, n := range votes {
		if n[0] > n[1] {
			yes++
		}
	}
	return float64(yes) / float64(len(votes)), nil
}

func judgePrompt(rubrics []Rubric, user, response string) string {
	var b strings.Builder
	b.WriteString("You grade an AI agent's final response against a list of properties.\n")
	b.WriteString("For each property, in order, decide whether the response has it, and answer exactly in this form:\n")
	b.WriteString("Property: <the property's text, copied>\nRationale: <one sentence>\nVerdict: yes or no\n\n")
	fmt.Fprintf(&b, "The user's message:\n<<<\n%s\n>>>\n\nThe agent's final response:\n<<<\n%s\n>>>\n\nThe properties:\n", user, response)
	for _, r := range rubrics {
		fmt.Fprintf(&b, "- %s\n", r.Text)
	}
	return b.String()
}

func generateText(ctx context.Context, m model.Model, prompt string) (string, error) {
	req := &model.Request{Contents: []*agentrunnerv1.Content{{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: prompt}}}}}}
	var text string
	for resp, err := range m.Generate(ctx, req, false) {
		if err != nil {
			return "", err
		}
		if resp.ErrorCode != "" {
			return "", fmt.Errorf("%s: %s", resp.ErrorCode, resp.ErrorMessage)
		}
		text = (&Content{Parts: textParts(resp.Content)}).Text()
	}
	return text, nil
}

func textParts(c *agentrunnerv1.Content) []Part {
	var out []Part
	for _, p := range c.GetParts() {
		if p.GetText() != "" && !p.GetThought() {
			out = append(out, Part{Text: p.GetText()})
		}
	}
	return out
}

var (
	propertyLine = regexp.MustCompile(`Property: (.*)`)
	verdictLine  = regexp.MustCompile(`Verdict: (.*)`)
)

// ParseVerdicts reads a judge's answer as ADK's default parser does: the
// n-th "Property:" line goes with the n-th "Verdict:" line; a verdict
// containing "yes" is true, else one containing "no" false, else none.
// Properties whose text is no rubric's are ignored. It returns the
// verdicts by rubric id.
func ParseVerdicts(text string, rubrics []Rubric) map[string]bool {
	byText := make(map[string]string, len(rubrics))
	for _, r := range rubrics {
		byText[strings.ToLower(strings.TrimSpace(r.Text))] = r.ID
	}
	props := propertyLine.FindAllStringSubmatch(text, -1)
	verdicts := verdictLine.FindAllStringSubmatch(text, -1)
	out := map[string]bool{}
	for i := range min(len(props), len(verdicts)) {
		id, ok := byText[strings.ToLower(strings.TrimSpace(props[i][1]))]
		if !ok {
			continue
		}
		v := strings.ToLower(verdicts[i][1])
		switch {
		case strings.Contains(v, "yes"):
			out[id] = true
		case strings.Contains(v, "no"):
			out[id] = false
		}
	}
	return out
}
