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
