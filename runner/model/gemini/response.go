package gemini

import (
	"encoding/json"
	"fmt"
	"slices"

	"cloud.google.com/go/civil"

	"google.golang.org/genai"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// errCodeUnknown is the ErrorCode of a response that has neither a candidate
// nor a prompt block reason, so there is nothing better to report.
const errCodeUnknown = "UNKNOWN_ERROR"

// accumulator builds the complete Response of a call from one response (a
// unary call) or from every chunk of a stream.
//
// Only the first candidate is read: the runner continues one conversation, so
// a CandidateCount above one is of no use to it.
type accumulator struct {
	// mergeText joins consecutive text parts of the same kind (answer or
	// thought). A stream splits one answer across chunks; the complete
	// response should hold it as the model meant it. A unary response is kept
	// as the model returned it.
	mergeText bool

	parts         []*agentrunnerv1.Part
	role          string
	sawCandidate  bool
	finishReason  genai.FinishReason
	finishMessage string
	blockReason   genai.BlockedReason
	blockMessage  string
	usage         *genai.GenerateContentResponseUsageMetadata
	modelVersion  string
	citations     []*agentrunnerv1.Citation
	grounding     *genai.GroundingMetadata
}

// add records one response or chunk. It returns the Content the chunk
// carries (nil when it carries none), converted and not shared with the
// accumulator, so the caller may hand it out as a partial response.
func (a *accumulator) add(r *genai.GenerateContentResponse) (*agentrunnerv1.Content, error) {
	if r == nil {
		return nil, nil
	}
	if r.ModelVersion != "" {
		a.modelVersion = r.ModelVersion
	}
	if r.UsageMetadata != nil {
		// Each chunk's usage is the running total so far, so the last one
		// wins; it is not summed.
		a.usage = r.UsageMetadata
	}
	if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" {
		a.blockReason = pf.BlockReason
		a.blockMessage = pf.BlockReasonMessage
	}
	if len(r.Candidates) == 0 || r.Candidates[0] == nil {
		return nil, nil
	}
	cand := r.Candidates[0]
	a.sawCandidate = true
	if cand.FinishReason != "" {
		a.finishReason = cand.FinishReason
	}
	if cand.FinishMessage != "" {
		a.finishMessage = cand.FinishMessage
	}
	a.addCitations(cand.CitationMetadata)
	if cand.GroundingMetadata != nil {
		// Grounding comes whole, with the last chunk of a stream.
		a.grounding = cand.GroundingMetadata
	}
	content, err := fromGenaiContent(cand.Content)
	if err != nil {
		return nil, fmt.Errorf("convert response: %w", err)
	}
	if content == nil || len(content.Parts) == 0 {
		return nil, nil
	}
	if content.Role != "" {
		a.role = content.Role
	}
	for _, p := range content.Parts {
		a.appendPart(proto.CloneOf(p))
	}
	return content, nil
}

// appendPart adds p, merging it into the last part when both are text of the
// same kind. Two different thought signatures are never merged into one part:
// each must go back to the model attached to the text it came with.
func (a *accumulator) appendPart(p *agentrunnerv1.Part) {
	if a.mergeText && len(a.parts) > 0 {
		last := a.parts[len(a.parts)-1]
		lt, lok := last.Data.(*agentrunnerv1.Part_Text)
		pt, pok := p.Data.(*agentrunnerv1.Part_Text)
		if lok && pok && last.Thought == p.Thought &&
			(len(last.ThoughtSignature) == 0 || len(p.ThoughtSignature) == 0) {
			lt.Text += pt.Text
			if len(p.ThoughtSignature) > 0 {
				last.ThoughtSignature = p.ThoughtSignature
			}
			return
		}
	}
	a.parts = append(a.parts, p)
}

// response returns the complete Response. In-band failures (a blocked prompt,
// a stop for a reason other than STOP, no candidate at all) are reported in
// ErrorCode and ErrorMessage, keeping whatever content arrived before the
// stop (for MAX_TOKENS, the truncated answer).
func (a *accumulator) response() *model.Response {
	resp := &model.Response{
		TurnComplete: true,
		FinishReason: string(a.finishReason),
		Usage:        fromGenaiUsage(a.usage),
		ModelVersion: a.modelVersion,
		Grounding:    fromGenaiGrounding(a.grounding),
	}
	if len(a.citations) > 0 {
		resp.Citations = &agentrunnerv1.CitationMetadata{Citations: a.citations}
	}
	if a.sawCandidate {
		role := a.role
		if role == "" {
			role = genai.RoleModel
		}
		// A candidate with no parts still yields a Content, empty, so that a
		// successful response always has one.
		resp.Content = &agentrunnerv1.Content{Role: role, Parts: a.parts}
	}
	switch {
	case a.blockReason != "":
		resp.ErrorCode = string(a.blockReason)
		resp.ErrorMessage = a.blockMessage
		if resp.ErrorMessage == "" {
			resp.ErrorMessage = fmt.Sprintf("the prompt was blocked (%s)", a.blockReason)
		}
	case !a.sawCandidate:
		resp.ErrorCode = errCodeUnknown
		resp.ErrorMessage = "the model returned no candidates"
	case !finishedNormally(a.finishReason):
		resp.ErrorCode = string(a.finishReason)
		resp.ErrorMessage = a.finishMessage
		if resp.ErrorMessage == "" {
			resp.ErrorMessage = describeFinishReason(a.finishReason)
		}
	}
	return resp
}

// finishedNormally reports whether the model stopped because it was done.
// An empty reason counts: a stream may end without one, and a unary response
// without one has not been cut short by anything the API reports.
func finishedNormally(r genai.FinishReason) bool {
	return r == "" || r == genai.FinishReasonStop || r == genai.FinishReasonUnspecified
}

func describeFinishReason(r genai.FinishReason) string {
	switch r {
	case genai.FinishReasonMaxTokens:
		return "the response reached the maximum number of output tokens"
	case genai.FinishReasonSafety:
		return "the response was stopped for safety reasons"
	case genai.FinishReasonRecitation:
		return "the response was stopped because it recited training data"
	case genai.FinishReasonMalformedFunctionCall:
		return "the model produced a malformed function call"
	default:
		return fmt.Sprintf("the model stopped early (%s)", r)
	}
}

// addCitations keeps a chunk's citations. A stream may repeat a citation
// in later chunks; it is kept once.
func (a *accumulator) addCitations(m *genai.CitationMetadata) {
	if m == nil {
		return
	}
	for _, c := range m.Citations {
		if c == nil {
			continue
		}
		pc := fromGenaiCitation(c)
		if !slices.ContainsFunc(a.citations, func(o *agentrunnerv1.Citation) bool { return proto.Equal(o, pc) }) {
			a.citations = append(a.citations, pc)
		}
	}
}

func fromGenaiCitation(c *genai.Citation) *agentrunnerv1.Citation {
	return &agentrunnerv1.Citation{
		StartIndex:      c.StartIndex,
		EndIndex:        c.EndIndex,
		Uri:             c.URI,
		Title:           c.Title,
		License:         c.License,
		PublicationDate: formatDate(c.PublicationDate),
	}
}

// formatDate writes as much of the date as the source gave: Google's Date
// leaves the day, or the month and the day, zero when they are unknown.
func formatDate(d civil.Date) string {
	switch {
	case d.Year <= 0:
		return ""
	case d.Month <= 0:
		return fmt.Sprintf("%04d", d.Year)
	case d.Day <= 0:
		return fmt.Sprintf("%04d-%02d", d.Year, int(d.Month))
	}
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
}

// fromGenaiGrounding keeps the grounding metadata whole, as its JSON: it
// has many kinds of sources (web, retrieval, maps) and grows with the API,
// and what the caller shows of it is the caller's choice. Metadata that
// does not convert is dropped with the answer kept.
func fromGenaiGrounding(g *genai.GroundingMetadata) *structpb.Struct {
	if g == nil {
		return nil
	}
	b, err := json.Marshal(g)
	if err != nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || len(m) == 0 {
		return nil
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil
	}
	return s
}
