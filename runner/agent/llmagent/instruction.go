package llmagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/types/known/structpb"
)

func textPart(s string) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: s}}
}

// textOf concatenates the non-thought text parts of c.
func textOf(c *agentrunnerv1.Content) string {
	var sb strings.Builder
	for _, p := range c.GetParts() {
		if t, ok := p.GetData().(*agentrunnerv1.Part_Text); ok && !p.GetThought() {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}

// placeholder matches {name} and {name?} where name is a state key,
// optionally scoped, or artifact.FILENAME.
var placeholder = regexp.MustCompile(`\{(artifact\.[^{}?\s]+|(?:app:|user:|temp:)?[A-Za-z_][A-Za-z0-9_]*)(\?)?\}`)

// errMissingState is wrapped by instruction errors naming a missing key.
var errMissingState = errors.New("state key missing")

// errMissingArtifact is wrapped by instruction errors naming a missing
// artifact.
var errMissingArtifact = errors.New("artifact missing")

// artifactPrefix starts a placeholder filled from an artifact.
const artifactPrefix = "artifact."

// renderInstruction fills {key} placeholders from state and
// {artifact.NAME} ones from the latest version of the session's artifact.
// One pass: text that a placeholder brings in is not rendered again.
func renderInstruction(ctx context.Context, instr string, state agent.State, arts agent.Artifacts) (string, error) {
	if !strings.Contains(instr, "{") {
		return instr, nil
	}
	var err error
	out := placeholder.ReplaceAllStringFunc(instr, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		key, optional := sub[1], sub[2] == "?"
		if name, ok := strings.CutPrefix(key, artifactPrefix); ok {
			text, aerr := artifactText(ctx, arts, name, optional)
			if aerr != nil && err == nil {
				err = aerr
			}
			return text
		}
		v, ok := state.Get(key)
		if !ok {
			if !optional && err == nil {
				err = fmt.Errorf("instruction placeholder {%s}: %w: %w", key, errMissingState, store.ErrInvalidArgument)
			}
			return ""
		}
		if s, ok := v.GetKind().(*structpb.Value_StringValue); ok {
			return s.StringValue
		}
		b, jerr := json.Marshal(v.AsInterface())
		if jerr != nil {
			return v.String()
		}
		return string(b)
	})
	return out, err
}

// maxArtifactText bounds the text {artifact.NAME} brings into an
// instruction: every model request of the agent carries the instruction,
// so a large artifact would cost its bytes on each call. A longer text is
// cut at a rune boundary and ends with a marker saying how much was kept,
// so that neither the model nor a reader takes the cut text for whole.
const maxArtifactText = 64 << 10

// artifactText is what {artifact.NAME} becomes: the text of a text
// artifact (a text part, or inline data of a text/* or JSON MIME type
// that is valid UTF-8), at most maxArtifactText bytes of it; a short
// description of any other.
func artifactText(ctx context.Context, arts agent.Artifacts, name string, optional bool) (string, error) {
	var part *agentrunnerv1.Part
	err := store.ErrNotFound // a context without artifacts has none
	if arts != nil {
		part, err = arts.Load(ctx, name, 0)
	}
	switch {
	case errors.Is(err, store.ErrNotFound) && optional:
		return "", nil
	case errors.Is(err, store.ErrNotFound):
		return "", fmt.Errorf("instruction placeholder {artifact.%s}: %w: %w", name, errMissingArtifact, store.ErrInvalidArgument)
	case err != nil:
		return "", fmt.Errorf("instruction placeholder {artifact.%s}: %w", name, err)
	}
	switch d := part.GetData().(type) {
	case *agentrunnerv1.Part_Text:
		return capText(name, d.Text), nil
	case *agentrunnerv1.Part_InlineData:
		data := d.InlineData.GetData()
		// Invalid UTF-8 under a text type is mislabelled binary (or
		// another charset): its bytes would reach the model mangled, so
		// it gets the description, as binary data does.
		if isTextMIME(d.InlineData.GetMimeType()) && utf8.Valid(data) {
			return capText(name, string(data)), nil
		}
		return fmt.Sprintf("[artifact %s: %s, %d bytes]", name, d.InlineData.GetMimeType(), len(data)), nil
	case *agentrunnerv1.Part_FileData:
		return fmt.Sprintf("[artifact %s: %s at %s]", name, d.FileData.GetMimeType(), d.FileData.GetFileUri()), nil
	}
	return fmt.Sprintf("[artifact %s]", name), nil
}

// isTextMIME reports whether data of MIME type mime is text a model can
// read as is: text/*, application/json, or any +json type, parameters
// (charset=…) aside.
func isTextMIME(mime string) bool {
	t, _, _ := strings.Cut(mime, ";")
	t = strings.ToLower(strings.TrimSpace(t))
	return strings.HasPrefix(t, "text/") || t == "application/json" || strings.HasSuffix(t, "+json")
}

// capText returns text, or its first maxArtifactText bytes (cut back to a
// rune boundary) followed by a line saying it was cut.
func capText(name, text string) string {
	if len(text) <= maxArtifactText {
		return text
	}
	n := maxArtifactText
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return fmt.Sprintf("%s\n[artifact %s truncated: first %d of %d bytes]", text[:n], name, n, len(text))
}
