package server

import (
	"context"
	"iter"
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/apps"
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
	build := func(name, instr string) func(t *testing.T) apps.App {
		return func(t *testing.T) apps.App {
			a := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: name + "_agent", Model: instructionModel{}, Instruction: instr}))
			return apps.App{Name: name, Root: a}
		}
	}
	e := newEnv(t, withRunnerApps(t,
		build("notes", "Notes: {artifact.notes.txt} / {artifact.extra?}."),
		build("strict", "Needs {artifact.missing}.")))
	e.createSession(t, "notes", "u1", "s1")
	for _, text := range []string{"old", "call Ada"} {
		if _, err := e.artifacts.SaveArtifact(t.Context(), &servicev1.SaveArtifactRequest{AppName: "notes", UserId: "u1", SessionId: "s1", Filename: "notes.txt",
			Artifact: &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: text}}}); err != nil {
			t.Fatal(err)
		}
	}
	res := e.run(t, t.Context(), runReq("notes", "s1", "go"))
	if res.status != nil || len(res.kinds) != 1 || !strings.HasSuffix(res.kinds[0], "instruction: Notes: call Ada / .") {
		t.Fatalf("run: %v %q; want the latest artifact's text in the instruction", res.status, res.kinds)
	}

	e.createSession(t, "strict", "u1", "s1")
	res = e.run(t, t.Context(), runReq("strict", "s1", "go"))
	if res.status != nil || len(res.errors) != 1 || !strings.Contains(res.errors[0].GetMessage(), "{artifact.missing}") {
		t.Fatalf("run without the artifact: %v %q %v; want one in-band error naming it", res.status, res.kinds, res.errors)
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
			app := strings.NewReplacer(".", "_").Replace(c.name)
			e := newEnv(t, withRunnerApps(t, func(t *testing.T) apps.App {
				a := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "reader", Model: instructionModel{}, Instruction: "<{artifact." + c.name + "}>"}))
				return apps.App{Name: app, Root: a}
			}))
			e.createSession(t, app, "u1", "s1")
			if _, err := e.artifacts.SaveArtifact(t.Context(), &servicev1.SaveArtifactRequest{AppName: app, UserId: "u1", SessionId: "s1", Filename: c.name, Artifact: c.part}); err != nil {
				t.Fatal(err)
			}
			res := e.run(t, t.Context(), runReq(app, "s1", "go"))
			if res.status != nil || len(res.events) != 1 {
				t.Fatalf("run: %v %q", res.status, res.kinds)
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
