package gemini

import (
	"fmt"

	"google.golang.org/genai"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// This file is the Gemini boundary: the only place where agentrunner.v1
// messages and genai types meet. Conversions go both ways and keep every field
// both sides can represent, so a Content that goes to the model and comes back
// in a later turn is unchanged.

// toGenaiContents converts the conversation. Nil contents and contents left
// without parts are dropped: the API rejects a content with no parts
// ("contents.parts must not be empty") and there is nothing in it to send.
func toGenaiContents(contents []*agentrunnerv1.Content, backend genai.Backend) []*genai.Content {
	out := make([]*genai.Content, 0, len(contents))
	for _, c := range contents {
		gc := toGenaiContent(c, backend)
		if gc == nil || len(gc.Parts) == 0 {
			continue
		}
		out = append(out, gc)
	}
	return out
}

// toGenaiContent converts one Content. An empty role is sent as "user", which
// is how the proto says an empty role is read on input.
func toGenaiContent(c *agentrunnerv1.Content, backend genai.Backend) *genai.Content {
	if c == nil {
		return nil
	}
	role := c.GetRole()
	if role == "" {
		role = genai.RoleUser
	}
	gc := &genai.Content{Role: role, Parts: make([]*genai.Part, 0, len(c.GetParts()))}
	for _, p := range c.GetParts() {
		if gp := toGenaiPart(p, backend); gp != nil {
			gc.Parts = append(gc.Parts, gp)
		}
	}
	return gc
}

// toGenaiPart converts one Part, or returns nil for a part that carries
// nothing (no data and no thought signature).
//
// The Gemini Developer API rejects display_name on inline and file data (only
// Vertex AI accepts it), so it is left out for that backend; the name stays in
// our stored Content, which is the copy that matters.
func toGenaiPart(p *agentrunnerv1.Part, backend genai.Backend) *genai.Part {
	if p == nil {
		return nil
	}
	keepDisplayName := backend == genai.BackendVertexAI
	gp := &genai.Part{Thought: p.GetThought(), ThoughtSignature: cloneBytes(p.GetThoughtSignature())}
	switch d := p.GetData().(type) {
	case *agentrunnerv1.Part_Text:
		gp.Text = d.Text
	case *agentrunnerv1.Part_InlineData:
		b := &genai.Blob{MIMEType: d.InlineData.GetMimeType(), Data: cloneBytes(d.InlineData.GetData())}
		if keepDisplayName {
			b.DisplayName = d.InlineData.GetDisplayName()
		}
		gp.InlineData = b
	case *agentrunnerv1.Part_FileData:
		f := &genai.FileData{MIMEType: d.FileData.GetMimeType(), FileURI: d.FileData.GetFileUri()}
		if keepDisplayName {
			f.DisplayName = d.FileData.GetDisplayName()
		}
		gp.FileData = f
	case *agentrunnerv1.Part_FunctionCall:
		gp.FunctionCall = &genai.FunctionCall{
			ID:   d.FunctionCall.GetId(),
			Name: d.FunctionCall.GetName(),
			Args: structToMap(d.FunctionCall.GetArgs()),
		}
	case *agentrunnerv1.Part_FunctionResponse:
		gp.FunctionResponse = &genai.FunctionResponse{
			ID:       d.FunctionResponse.GetId(),
			Name:     d.FunctionResponse.GetName(),
			Response: structToMap(d.FunctionResponse.GetResponse()),
		}
	default:
		// No payload. A bare thought signature is still worth sending back:
		// the model asked for it to be returned unchanged.
		if len(gp.ThoughtSignature) == 0 {
			return nil
		}
	}
	return gp
}

// fromGenaiContent converts a model's Content. Part kinds that
// agentrunner.v1.Part cannot hold (executable code, code execution results,
// tool calls of server-side tools) are dropped; see fromGenaiPart.
func fromGenaiContent(gc *genai.Content) (*agentrunnerv1.Content, error) {
	if gc == nil {
		return nil, nil
	}
	c := &agentrunnerv1.Content{Role: gc.Role}
	for i, gp := range gc.Parts {
		p, err := fromGenaiPart(gp)
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
		if p != nil {
			c.Parts = append(c.Parts, p)
		}
	}
	return c, nil
}

// fromGenaiPart converts one genai Part, or returns nil when the part holds
// nothing agentrunner.v1.Part can represent. A text part with empty text is
// kept when it carries a thought or a thought signature: Gemini sends the
// signature that way at the end of a streamed answer, and it must be returned
// on the next turn.
func fromGenaiPart(gp *genai.Part) (*agentrunnerv1.Part, error) {
	if gp == nil {
		return nil, nil
	}
	p := &agentrunnerv1.Part{Thought: gp.Thought, ThoughtSignature: cloneBytes(gp.ThoughtSignature)}
	switch {
	case gp.FunctionCall != nil:
		args, err := mapToStruct(gp.FunctionCall.Args)
		if err != nil {
			return nil, fmt.Errorf("function call %q args: %w", gp.FunctionCall.Name, err)
		}
		p.Data = &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{
			Id: gp.FunctionCall.ID, Name: gp.FunctionCall.Name, Args: args,
		}}
	case gp.FunctionResponse != nil:
		resp, err := mapToStruct(gp.FunctionResponse.Response)
		if err != nil {
			return nil, fmt.Errorf("function response %q: %w", gp.FunctionResponse.Name, err)
		}
		p.Data = &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{
			Id: gp.FunctionResponse.ID, Name: gp.FunctionResponse.Name, Response: resp,
		}}
	case gp.InlineData != nil:
		p.Data = &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{
			MimeType: gp.InlineData.MIMEType, Data: cloneBytes(gp.InlineData.Data), DisplayName: gp.InlineData.DisplayName,
		}}
	case gp.FileData != nil:
		p.Data = &agentrunnerv1.Part_FileData{FileData: &agentrunnerv1.FileData{
			MimeType: gp.FileData.MIMEType, FileUri: gp.FileData.FileURI, DisplayName: gp.FileData.DisplayName,
		}}
	case gp.Text != "" || gp.Thought || len(gp.ThoughtSignature) > 0:
		p.Data = &agentrunnerv1.Part_Text{Text: gp.Text}
	default:
		return nil, nil
	}
	return p, nil
}

// toGenaiTools declares all functions in one Tool, which is how the API
// expects function declarations to be grouped.
func toGenaiTools(decls []*model.FunctionDeclaration) []*genai.Tool {
	if len(decls) == 0 {
		return nil
	}
	fds := make([]*genai.FunctionDeclaration, 0, len(decls))
	for _, d := range decls {
		if d == nil {
			continue
		}
		fd := &genai.FunctionDeclaration{Name: d.Name, Description: d.Description}
		// Assign only non-nil maps: a nil map stored in the `any` field would
		// be sent as "parametersJsonSchema": null, which the API rejects.
		if d.Parameters != nil {
			fd.ParametersJsonSchema = d.Parameters
		}
		if d.Response != nil {
			fd.ResponseJsonSchema = d.Response
		}
		fds = append(fds, fd)
	}
	if len(fds) == 0 {
		return nil
	}
	return []*genai.Tool{{FunctionDeclarations: fds}}
}

// toGenaiConfig builds the per-call config from the request. It always
// returns a fresh value because genai fills in defaults on the config it is
// given.
func toGenaiConfig(req *model.Request) *genai.GenerateContentConfig {
	cfg := &genai.GenerateContentConfig{Tools: toGenaiTools(req.Tools)}
	if req.SystemInstruction != "" {
		cfg.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.SystemInstruction}}}
	}
	if c := req.Config; c != nil {
		cfg.Temperature = clonePtr(c.Temperature)
		cfg.TopP = clonePtr(c.TopP)
		cfg.TopK = clonePtr(c.TopK)
		cfg.MaxOutputTokens = c.MaxOutputTokens
		cfg.StopSequences = append([]string(nil), c.StopSequences...)
		cfg.CandidateCount = c.CandidateCount
		cfg.ResponseMIMEType = c.ResponseMIMEType
		if c.ThinkingBudget != nil || c.IncludeThoughts {
			cfg.ThinkingConfig = &genai.ThinkingConfig{
				ThinkingBudget:  clonePtr(c.ThinkingBudget),
				IncludeThoughts: c.IncludeThoughts,
			}
		}
	}
	return cfg
}

// fromGenaiUsage converts usage metadata; nil stays nil.
func fromGenaiUsage(u *genai.GenerateContentResponseUsageMetadata) *agentrunnerv1.UsageMetadata {
	if u == nil {
		return nil
	}
	out := &agentrunnerv1.UsageMetadata{
		PromptTokenCount:           u.PromptTokenCount,
		CandidatesTokenCount:       u.CandidatesTokenCount,
		ThoughtsTokenCount:         u.ThoughtsTokenCount,
		CachedContentTokenCount:    u.CachedContentTokenCount,
		ToolUsePromptTokenCount:    u.ToolUsePromptTokenCount,
		TotalTokenCount:            u.TotalTokenCount,
		PromptTokensDetails:        fromGenaiModalities(u.PromptTokensDetails),
		CacheTokensDetails:         fromGenaiModalities(u.CacheTokensDetails),
		CandidatesTokensDetails:    fromGenaiModalities(u.CandidatesTokensDetails),
		ToolUsePromptTokensDetails: fromGenaiModalities(u.ToolUsePromptTokensDetails),
	}
	if u.TrafficType != genai.TrafficTypeUnspecified {
		out.TrafficType = string(u.TrafficType)
	}
	return out
}

func fromGenaiModalities(ms []*genai.ModalityTokenCount) []*agentrunnerv1.ModalityTokenCount {
	var out []*agentrunnerv1.ModalityTokenCount
	for _, m := range ms {
		if m == nil {
			continue
		}
		out = append(out, &agentrunnerv1.ModalityTokenCount{Modality: string(m.Modality), TokenCount: m.TokenCount})
	}
	return out
}

// structToMap keeps nil as nil so that an absent Struct stays absent on the
// wire, and an empty Struct is sent as an empty object.
func structToMap(s *structpb.Struct) map[string]any {
	if s == nil {
		return nil
	}
	return s.AsMap()
}

func mapToStruct(m map[string]any) (*structpb.Struct, error) {
	if m == nil {
		return nil, nil
	}
	return structpb.NewStruct(m)
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
