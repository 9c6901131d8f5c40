package runner

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// Names of the built-in tools.
const (
	// ToolTransferToAgent hands the conversation to another agent. LLM
	// agents get it automatically when they have a valid target; it cannot
	// be given as one of their Tools.
	ToolTransferToAgent = "transfer_to_agent"
	// ToolExitLoop stops the loop agent the calling agent runs in.
	ToolExitLoop = "exit_loop"
	// ToolLoadArtifacts loads session artifacts into the conversation.
	ToolLoadArtifacts = "load_artifacts"
)

// BuiltinTool returns a new instance of the built-in tool called name:
// ToolExitLoop or ToolLoadArtifacts. transfer_to_agent is not among them:
// it is added automatically.
func BuiltinTool(name string) (Tool, bool) {
	switch name {
	case ToolExitLoop:
		return ExitLoopTool(), true
	case ToolLoadArtifacts:
		return LoadArtifactsTool(), true
	}
	return nil, false
}

// ExitLoopTool returns the exit_loop tool. Calling it escalates, which
// stops the enclosing loop agent once the calling agent has finished, and
// skips summarization, so the agent's turn ends with the call.
func ExitLoopTool() Tool {
	t, err := NewFunctionTool(ToolExitLoop,
		"Exits the loop. Call this function only when you are instructed to do so.",
		func(ctx ToolContext, _ struct{}) (map[string]any, error) {
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
type loadArtifactsTool struct{ Tool }

// LoadArtifactsTool returns the load_artifacts tool. Every request of an
// agent that has it lists the session's artifacts in the instruction; when
// the model calls it with names, the request that follows the call carries
// each artifact's content after the function response.
func LoadArtifactsTool() Tool {
	t, err := NewFunctionTool(ToolLoadArtifacts,
		"Loads artifacts of the session into the conversation, so that you can read them.",
		func(ctx ToolContext, args loadArtifactsArgs) (map[string]any, error) {
			if len(args.ArtifactNames) == 0 {
				return nil, fmt.Errorf("no artifact names given")
			}
			names, err := artifactNames(ctx)
			if err != nil {
				return nil, err
			}
			for _, n := range args.ArtifactNames {
				if !slices.Contains(names, n) {
					return nil, fmt.Errorf("no artifact named %q; the session has %s", n, quoteList(names))
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
func (t *loadArtifactsTool) ProcessRequest(ctx CallbackContext, req *model.Request) error {
	names, err := artifactNames(ctx)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	req.SystemInstruction = joinInstruction(req.SystemInstruction, fmt.Sprintf(
		"You have a list of artifacts: %s.\nWhen the user asks about any of them, call the `%s` function to load them before you answer.",
		quoteList(names), ToolLoadArtifacts))

	if len(req.Contents) == 0 {
		return nil
	}
	for _, p := range req.Contents[len(req.Contents)-1].GetParts() {
		fr := p.GetFunctionResponse()
		if fr.GetName() != ToolLoadArtifacts {
			continue
		}
		for _, v := range fr.GetResponse().GetFields()["artifact_names"].GetListValue().GetValues() {
			name := v.GetStringValue()
			part, err := ctx.Artifacts().Load(ctx, name, 0)
			if err != nil {
				part = textPart(fmt.Sprintf("(artifact %q could not be loaded: %v)", name, err))
			}
			req.Contents = append(req.Contents, &agentrunnerv1.Content{Role: RoleUser, Parts: []*agentrunnerv1.Part{
				textPart(fmt.Sprintf("Artifact %q is:", name)), part,
			}})
		}
	}
	return nil
}

func artifactNames(ctx CallbackContext) ([]string, error) {
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

func quoteList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	b, err := json.Marshal(names)
	if err != nil {
		return strings.Join(names, ", ")
	}
	return string(b)
}

func joinInstruction(instr, more string) string {
	if instr == "" {
		return more
	}
	return instr + "\n\n" + more
}

// transferArg is the argument of transfer_to_agent naming the target.
const transferArg = "agent_name"

// transferTool is transfer_to_agent for one agent. Its targets are
// computed for each request from the tree the agent runs in, so the enum in
// its declaration names exactly the agents it may hand over to.
type transferTool struct {
	targets []Agent
}

func (t *transferTool) Name() string        { return ToolTransferToAgent }
func (t *transferTool) IsLongRunning() bool { return false }
func (t *transferTool) Description() string {
	return "Transfers the conversation to another agent that is better suited to answer. The instruction lists the agents available."
}

func (t *transferTool) Declaration() *model.FunctionDeclaration {
	names := make([]string, len(t.targets))
	for i, a := range t.targets {
		names[i] = a.Name()
	}
	return &model.FunctionDeclaration{
		Name:        ToolTransferToAgent,
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

func (t *transferTool) Run(ctx ToolContext, args map[string]any) (map[string]any, error) {
	name, _ := args[transferArg].(string)
	var names []string
	for _, a := range t.targets {
		if a.Name() == name {
			ctx.Actions().TransferToAgent = name
			return map[string]any{}, nil
		}
		names = append(names, a.Name())
	}
	return nil, fmt.Errorf("cannot transfer to %q: valid agents are %s", name, quoteList(names))
}

// transferTargets returns the agents an LLM agent may hand over to: its
// sub-agents, then, when its parent is an LLM agent too, the parent unless
// disallowed and the parent's other children unless disallowed. A workflow
// parent is left out, with its children: handing its turn to them would
// break the workflow's order.
func transferTargets(t *tree, a Agent) []Agent {
	b := a.base()
	targets := append([]Agent(nil), b.subAgents...)
	if t == nil || b.llm == nil {
		return targets
	}
	parent, ok := t.parent[a.Name()]
	if !ok || parent.base().llm == nil {
		return targets
	}
	if !b.llm.disallowTransferToParent {
		targets = append(targets, parent)
	}
	if !b.llm.disallowTransferToPeers {
		for _, peer := range parent.base().subAgents {
			if peer.Name() != a.Name() {
				targets = append(targets, peer)
			}
		}
	}
	return targets
}

// transferInstruction tells the model where it may transfer, and when.
func transferInstruction(self Agent, targets []Agent, parent Agent) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "You are agent %q. You can hand the conversation to one of these agents with the `%s` function:\n", self.Name(), ToolTransferToAgent)
	for _, a := range targets {
		role := ""
		if parent != nil && a == parent {
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
