package runner_test

import (
	"context"
	"iter"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model"
)

// instructionModel answers with the instruction it was given.
type instructionModel struct{}

func (instructionModel) Name() string { return "instruction-model" }

func (instructionModel) Generate(_ context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		yield(&model.Response{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{
			Text: "instruction: " + req.SystemInstruction}}}}, TurnComplete: true, FinishReason: "STOP"}, nil)
	}
}

// TestInstructionArtifactPlaceholders: {artifact.NAME} is filled from the
// latest version of the session's artifact, {artifact.NAME?} may be
// missing, and a missing required one is an in-band error.
func TestInstructionArtifactPlaceholders(t *testing.T) {
	build := func(name, instr string) *feature {
		a := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: name + "_agent", Model: instructionModel{}, Instruction: instr}))
		return newFeature(t, runner.Config{Root: a})
	}
	notes := build("notes", "Notes: {artifact.notes.txt} / {artifact.extra?}.")
	k := notes.session(t, "s1")
	for _, text := range []string{"old", "call Ada"} {
		if _, err := notes.store.SaveArtifact(t.Context(), k, "notes.txt", &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: text}}); err != nil {
			t.Fatal(err)
		}
	}
	res := notes.run(t, ask("s1", "go"))
	if res.err != nil || len(res.kinds) != 1 || !strings.HasSuffix(res.kinds[0], "instruction: Notes: call Ada / .") {
		t.Fatalf("run: %v %q; want the latest artifact's text in the instruction", res.err, res.kinds)
	}

	strict := build("strict", "Needs {artifact.missing}.")
	strict.session(t, "s1")
	res = strict.run(t, ask("s1", "go"))
	if res.err != nil || len(res.errs) != 1 || !strings.Contains(res.errs[0], "{artifact.missing}") {
		t.Fatalf("run without the artifact: %v %q %v; want one in-band error naming it", res.err, res.kinds, res.errs)
	}
}

// TestInstructionArtifactText: {artifact.NAME} is the text of a text/*
// or JSON artifact, saved as inline data (as the walkthrough saves
// notes.txt) or as a text part; a text longer than 64 KiB is cut there,
// with a marker; invalid UTF-8 and binary data get a description.
func TestInstructionArtifactText(t *testing.T) {
	long := strings.Repeat("é", 40<<10) // 80 KiB of two-byte runes
	blob := func(mime string, data []byte) *agentrunnerv1.Part {
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: mime, Data: data}}}
	}
	cases := []struct {
		name string
		part *agentrunnerv1.Part
		want string
	}{
		{"notes.txt", blob("text/plain", []byte("hello world")), "hello world"},
		{"readme.md", blob("text/markdown; charset=utf-8", []byte("# Title")), "# Title"},
		{"data.json", blob("application/json", []byte(`{"a":1}`)), `{"a":1}`},
		{"doc.jsonld", blob("application/ld+json", []byte(`{"@id":"x"}`)), `{"@id":"x"}`},
		{"typed.txt", &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "typed"}}, "typed"},
		{"long.txt", blob("text/plain", []byte(long)), long[:64<<10] + "\n[artifact long.txt truncated: first 65536 of 81920 bytes]"},
		{"bad.txt", blob("text/plain", []byte{'h', 0xff, 'i'}), "[artifact bad.txt: text/plain, 3 bytes]"},
		{"image.png", blob("image/png", []byte{0x89, 'P', 'N', 'G'}), "[artifact image.png: image/png, 4 bytes]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "reader", Model: instructionModel{}, Instruction: "<{artifact." + c.name + "}>"}))
			f := newFeature(t, runner.Config{Root: a})
			if _, err := f.store.SaveArtifact(t.Context(), f.session(t, "s1"), c.name, c.part); err != nil {
				t.Fatal(err)
			}
			res := f.run(t, ask("s1", "go"))
			if res.err != nil || len(res.events) != 1 {
				t.Fatalf("run: %v %q", res.err, res.kinds)
			}
			got := strings.TrimPrefix(res.events[0].GetContent().GetParts()[0].GetText(), "instruction: ")
			if want := "<" + c.want + ">"; got != want {
				if len(got) > 200 {
					got = got[:100] + "…" + got[len(got)-100:]
				}
				t.Fatalf("instruction %q; want %q", got, want[max(0, len(want)-100):])
			}
		})
	}
}
