package llmagent

import (
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/model"
)

// outputCapper is a model whose models entry caps its calls' output
// (ModelConfig.max_output_tokens).
type outputCapper interface{ MaxOutputTokens() int32 }

// pricer is a model that knows its price list (nil: unpriced).
type pricer interface{ Price() *model.Price }

// capOutput applies the model's output cap to req when the agent sets
// none lower, and returns what the call may spend, for the budgets to
// hold before it is made: the prompt, estimated at four bytes a token,
// plus the output cap, priced. Without a cap the call is uncapped.
func (l *llmAgent) capOutput(req *model.Request, hist history) agent.Estimate {
	maxOut := int32(0)
	if req.Config != nil {
		maxOut = req.Config.MaxOutputTokens
	}
	if c, ok := l.model.(outputCapper); ok {
		if m := c.MaxOutputTokens(); m > 0 && (maxOut <= 0 || m < maxOut) {
			maxOut = m
			cfg := model.GenerateConfig{}
			if req.Config != nil {
				cfg = *req.Config // the agent's config is shared: a copy
			}
			cfg.MaxOutputTokens = m
			req.Config = &cfg
		}
	}
	prompt := int64(promptTokens(req, hist))
	est := agent.Estimate{Tokens: prompt + int64(max(maxOut, 0)), Uncapped: maxOut <= 0}
	if p, ok := l.model.(pricer); ok && p.Price() != nil {
		u := &agentrunnerv1.UsageMetadata{PromptTokenCount: int32(min(prompt, 1<<31-1)), CandidatesTokenCount: max(maxOut, 0)}
		est.Micros = p.Price().Cost("", u).GetMicros()
	}
	return est
}

// promptTokens estimates req's prompt in tokens: a quarter of its text
// bytes and of its function calls' and results' names, rounded up. The
// contents' bytes are taken from hist when they are still its contents
// (nobody copied them to change them), not counted again.
func promptTokens(req *model.Request, hist history) int {
	n := len(req.SystemInstruction)
	if hist.bytes >= 0 && sameContents(req.Contents, hist.contents) {
		n += hist.bytes
	} else {
		for _, c := range req.Contents {
			cn, _, _ := scanParts(c.GetParts())
			n += cn
		}
	}
	for _, d := range req.Tools {
		n += len(d.Name) + len(d.Description)
	}
	return (n + 3) / 4
}

// sameContents reports whether a and b are the same slice.
func sameContents(a, b []*agentrunnerv1.Content) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
