package builtin

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
)

// Names of the built-in tools.
const (
	// TransferToAgentName hands the conversation to another agent. LLM
	// agents get it automatically when they have a valid target; it cannot
	// be given as one of their Tools.
	TransferToAgentName = "transfer_to_agent"
	// ExitLoopName stops the loop agent the calling agent runs in.
	ExitLoopName = "exit_loop"
	// LoadArtifactsName loads session artifacts into the conversation.
	LoadArtifactsName = "load_artifacts"
	// RequestConfirmationName is the reserved function an LLM agent calls
	// to ask the caller to confirm a call of a tool that requires it. Its
	// arguments are the original call: "call_id", "name" and "args". The
	// caller answers with a function response {"confirmed": true|false}.
	// No tool may take the name, and models never see these calls.
	RequestConfirmationName = "request_confirmation"
)

// ByName returns a new instance of the built-in tool called name:
// ExitLoopName, LoadArtifactsName, LoadMemoryName or PreloadMemoryName.
// transfer_to_agent is not among them:
// LLM agents add it by themselves.
func ByName(name string) (tool.Tool, bool) {
	switch name {
	case ExitLoopName:
		return ExitLoop(), true
	case LoadArtifactsName:
		return LoadArtifacts(), true
	case LoadMemoryName:
		return LoadMemory(), true
	case PreloadMemoryName:
		return PreloadMemory(), true
	}
	return nil, false
}

// ExitLoop returns the exit_loop tool. Calling it escalates, which
// stops the enclosing loop agent once the calling agent has finished, and
// skips summarization, so the agent's turn ends with the call.
func ExitLoop() tool.Tool {
	return builtinTool{exitLoop()}
}

// builtinTool marks a tool made with tool.NewFunction as a built-in.
type builtinTool struct{ tool.Tool }

func (builtinTool) Kind() agentrunnerv1.ToolKind { return agentrunnerv1.ToolKind_TOOL_KIND_BUILTIN }

func exitLoop() tool.Tool {
	t, err := tool.NewFunction(ExitLoopName,
		"Exits the loop. Call this function only when you are instructed to do so.",
		func(ctx tool.Context, _ struct{}) (map[string]any, error) {
			ctx.Actions().Escalate = true
			ctx.Actions().SkipSummarization = true
			return map[string]any{}, nil
		})
	if err != nil {
		panic(err) // the argument type above is a constant struct{}
	}
	return t
}

// loadArtifactsArgs are the arguments of load_artifacts.
type loadArtifactsArgs struct {
	ArtifactNames []string `json:"artifact_names" description:"Names of the artifacts to load."`
}

// loadArtifactsTool tells the model which artifacts the session has, and
// adds the ones it loads to the next request. The contents are not stored in
// the session: a later turn that needs them again loads them again.
type loadArtifactsTool struct{ tool.Tool }

func (*loadArtifactsTool) Kind() agentrunnerv1.ToolKind {
	return agentrunnerv1.ToolKind_TOOL_KIND_BUILTIN
}

// LoadArtifacts returns the load_artifacts tool. Every request of an
// agent that has it lists the session's artifacts in the instruction; when
// the model calls it with names, the request that follows the call carries
// each artifact's content after the function response.
func LoadArtifacts() tool.Tool {
	t, err := tool.NewFunction(LoadArtifactsName,
		"Loads artifacts of the session into the conversation, so that you can read them.",
		func(ctx tool.Context, args loadArtifactsArgs) (map[string]any, error) {
			if len(args.ArtifactNames) == 0 {
				return nil, fmt.Errorf("no artifact names given")
			}
			names, err := artifactNames(ctx)
			if err != nil {
				return nil, err
			}
			for _, n := range args.ArtifactNames {
				if !slices.Contains(names, n) {
					return nil, fmt.Errorf("no artifact named %q; the session has %s", n, QuoteList(names))
				}
			}
			return map[string]any{"artifact_names": args.ArtifactNames, "status": "the artifacts' contents follow"}, nil
		})
	if err != nil {
		panic(err) // loadArtifactsArgs is a valid argument type
	}
	return &loadArtifactsTool{Tool: t}
}

// ProcessRequest lists the artifacts in the instruction and, when the
// request answers a load_artifacts call, appends the artifacts it loaded.
func (t *loadArtifactsTool) ProcessRequest(ctx agent.CallbackContext, req *model.Request) error {
	names, err := artifactNames(ctx)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	req.SystemInstruction = JoinInstruction(req.SystemInstruction, fmt.Sprintf(
		"You have a list of artifacts: %s.\nWhen the user asks about any of them, call the `%s` function to load them before you answer.",
		QuoteList(names), LoadArtifactsName))

	if len(req.Contents) == 0 {
		return nil
	}
	for _, p := range req.Contents[len(req.Contents)-1].GetParts() {
		fr := p.GetFunctionResponse()
		if fr.GetName() != LoadArtifactsName {
			continue
		}
		for _, v := range fr.GetResponse().GetFields()["artifact_names"].GetListValue().GetValues() {
			name := v.GetStringValue()
			part, err := ctx.Artifacts().Load(ctx, name, 0)
			if err != nil {
				part = textPart(fmt.Sprintf("(artifact %q could not be loaded: %v)", name, err))
			}
			req.Contents = append(req.Contents, &agentrunnerv1.Content{Role: agent.RoleUser, Parts: []*agentrunnerv1.Part{
				textPart(fmt.Sprintf("Artifact %q is:", name)), part,
			}})
		}
	}
	return nil
}

func artifactNames(ctx agent.CallbackContext) ([]string, error) {
	vs, err := ctx.Artifacts().List(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(vs))
	for _, v := range vs {
		names = append(names, v.GetFilename())
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

func QuoteList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	b, err := json.Marshal(names)
	if err != nil {
		return strings.Join(names, ", ")
	}
	return string(b)
}

func JoinInstruction(instr, more string) string {
	if instr == "" {
		return more
	}
	return instr + "\n\n" + more
}

// transferArg is the argument of transfer_to_agent naming the target.
const transferArg = "agent_name"

// Transfer is transfer_to_agent for one agent and one step: its
// declaration's enum names exactly the agents it may hand over to, and
// Instruction tells the model about them.
type Transfer struct {
	self, parent agent.Agent
	targets      []agent.Agent
}

// NewTransfer returns transfer_to_agent for self, with the targets the tree
// allows it (agent.Tree.TransferTargets) and its parent, if any, so that
// the instruction can say which target that is.
func NewTransfer(self agent.Agent, targets []agent.Agent, parent agent.Agent) *Transfer {
	return &Transfer{self: self, parent: parent, targets: targets}
}

func (t *Transfer) Name() string        { return TransferToAgentName }
func (t *Transfer) IsLongRunning() bool { return false }

// Kind is TOOL_KIND_BUILTIN.
func (t *Transfer) Kind() agentrunnerv1.ToolKind { return agentrunnerv1.ToolKind_TOOL_KIND_BUILTIN }
func (t *Transfer) Description() string {
	return "Transfers the conversation to another agent that is better suited to answer. The instruction lists the agents available."
}

func (t *Transfer) Declaration() *model.FunctionDeclaration {
	names := make([]string, len(t.targets))
	for i, a := range t.targets {
		names[i] = a.Name()
	}
	return &model.FunctionDeclaration{
		Name:        TransferToAgentName,
		Description: t.Description(),
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				transferArg: map[string]any{"type": "string", "description": "Name of the agent to transfer to.", "enum": names},
			},
			"required": []string{transferArg},
		},
	}
}

func (t *Transfer) Run(ctx tool.Context, args map[string]any) (map[string]any, error) {
	name, _ := args[transferArg].(string)
	var names []string
	for _, a := range t.targets {
		if a.Name() == name {
			ctx.Actions().TransferToAgent = name
			return map[string]any{}, nil
		}
		names = append(names, a.Name())
	}
	return nil, fmt.Errorf("cannot transfer to %q: valid agents are %s", name, QuoteList(names))
}

// Instruction tells the model where it may transfer, and when.
func (t *Transfer) Instruction() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "You are agent %q. You can hand the conversation to one of these agents with the `%s` function:\n", t.self.Name(), TransferToAgentName)
	for _, a := range t.targets {
		role := ""
		if t.parent != nil && a == t.parent {
			role = " (your parent agent)"
		}
		desc := a.Description()
		if desc == "" {
			desc = "(no description)"
		}
		fmt.Fprintf(&sb, "- %s%s: %s\n", a.Name(), role, desc)
	}
	sb.WriteString("Answer yourself when you are the best agent for the question according to your description. " +
		"Otherwise call the function with the name of the agent that is, and do not write any other text.")
	return sb.String()
}

func textPart(s string) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: s}}
}
