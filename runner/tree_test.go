package runner

import (
	"errors"
	"iter"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/types/known/structpb"
)

// treeValidationCases each build an invalid tree and name the error.
var treeValidationCases = []struct {
	name  string
	build func(t *testing.T) error
	want  string // substring of the error
}{
	{
		name: "empty name",
		build: func(t *testing.T) error {
			_, err := agent.New(agent.Config{Run: sayAll()})
			return err
		},
		want: "agent name is empty",
	},
	{
		name: "reserved name",
		build: func(t *testing.T) error {
			_, err := agent.New(agent.Config{Name: "user", Run: sayAll()})
			return err
		},
		want: `"user" is reserved`,
	},
	{
		name: "missing run",
		build: func(t *testing.T) error {
			_, err := agent.New(agent.Config{Name: "a"})
			return err
		},
		want: "Run is required",
	},
	{
		name: "missing model",
		build: func(t *testing.T) error {
			_, err := llmagent.New(llmagent.Config{Name: "a"})
			return err
		},
		want: "Model is required",
	},
	{
		name: "duplicate sibling names",
		build: func(t *testing.T) error {
			_, err := workflow.NewSequential(workflow.Config{Name: "seq", SubAgents: []agent.Agent{mustAgent(t, "a"), mustAgent(t, "a")}})
			return err
		},
		want: `duplicate agent name "a"`,
	},
	{
		name: "duplicate name deep in the tree",
		build: func(t *testing.T) error {
			inner := must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "inner", SubAgents: []agent.Agent{mustAgent(t, "x")}}))
			_, err := workflow.NewParallel(workflow.Config{Name: "outer", SubAgents: []agent.Agent{inner, mustAgent(t, "x")}})
			return err
		},
		want: `duplicate agent name "x"`,
	},
	{
		name: "child named like its parent",
		build: func(t *testing.T) error {
			_, err := workflow.NewLoop(workflow.LoopConfig{Name: "a", SubAgents: []agent.Agent{mustAgent(t, "a")}})
			return err
		},
		want: `duplicate agent name "a"`,
	},
	{
		name: "second parent",
		build: func(t *testing.T) error {
			child := mustAgent(t, "child")
			must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "p1", SubAgents: []agent.Agent{child}}))
			_, err := workflow.NewSequential(workflow.Config{Name: "p2", SubAgents: []agent.Agent{child}})
			return err
		},
		want: `sub-agent "child" already has parent "p1"`,
	},
	{
		name: "reserved name below",
		build: func(t *testing.T) error {
			_, err := New(Config{AppName: "x", Store: newTestStore(t), Root: nil})
			return err
		},
		want: "root agent is required",
	},
	{
		name: "negative loop bound",
		build: func(t *testing.T) error {
			_, err := workflow.NewLoop(workflow.LoopConfig{Name: "l", MaxIterations: -1})
			return err
		},
		want: "negative MaxIterations",
	},
}

func TestTreeValidation(t *testing.T) {
	for _, tc := range treeValidationCases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.build(t)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestFailedConstructorLeavesChildrenFree(t *testing.T) {
	child := mustAgent(t, "child")
	if _, err := workflow.NewSequential(workflow.Config{Name: "p1", SubAgents: []agent.Agent{child, mustAgent(t, "child")}}); err == nil {
		t.Fatal("duplicate names accepted")
	}
	if _, err := workflow.NewSequential(workflow.Config{Name: "p2", SubAgents: []agent.Agent{child}}); err != nil {
		t.Fatalf("child still bound after a failed constructor: %v", err)
	}
}

// selectionTree is
//
//	root (llm)
//	├── helper (llm)
//	├── sticky (llm, disallows transfer to parent)
//	│   └── below_sticky (llm)
//	├── pipeline (sequential)
//	│   └── in_pipeline (llm)
//	└── worker (custom)
func selectionTree(t *testing.T) agent.Agent {
	below := llm(t, llmagent.Config{Name: "below_sticky"})
	sticky := llm(t, llmagent.Config{Name: "sticky", DisallowTransferToParent: true, SubAgents: []agent.Agent{below}})
	pipeline := must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "pipeline", SubAgents: []agent.Agent{llm(t, llmagent.Config{Name: "in_pipeline"})}}))
	return llm(t, llmagent.Config{Name: "root", SubAgents: []agent.Agent{llm(t, llmagent.Config{Name: "helper"}), sticky, pipeline, mustAgent(t, "worker")}})
}

func functionCall(id, name string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: agent.RoleModel, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{
		FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: name},
	}}}}
}

func functionResponse(id, name string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: agent.RoleUser, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionResponse{
		FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name, Response: &structpb.Struct{}},
	}}}}
}

func TestSelectAgent(t *testing.T) {
	type hist struct {
		author  string
		content *agentrunnerv1.Content
		inv     string // invocation id, for rewinds
		rewind  string // the invocation a rewind event undoes
	}
	in := func(inv string, h hist) hist { h.inv = inv; return h }
	rewind := func(inv, undone string) hist { return hist{author: "user", inv: inv, rewind: undone} }
	said := func(author string) hist { return hist{author: author, content: modelText("hi from " + author)} }
	user := hist{author: "user", content: userText("hello")}
	tests := []struct {
		name    string
		history []hist
		msg     *agentrunnerv1.Content
		want    string
	}{
		{name: "new session", msg: userText("hi"), want: "root"},
		{name: "root answered last", history: []hist{user, said("helper"), user, said("root")}, msg: userText("hi"), want: "root"},
		{name: "transferable agent answered last", history: []hist{user, said("root"), said("helper")}, msg: userText("again"), want: "helper"},
		{name: "last agent disallows transfer to parent", history: []hist{user, said("sticky")}, msg: userText("again"), want: "root"},
		{name: "an ancestor disallows transfer to parent", history: []hist{user, said("below_sticky")}, msg: userText("again"), want: "root"},
		{name: "ancestor is a workflow agent", history: []hist{user, said("in_pipeline")}, msg: userText("again"), want: "root"},
		{name: "custom agent answered last", history: []hist{user, said("worker")}, msg: userText("again"), want: "root"},
		{name: "non-resumable last, resumable before", history: []hist{user, said("helper"), said("worker")}, msg: userText("again"), want: "helper"},
		{name: "unknown author skipped", history: []hist{user, said("helper"), said("gone")}, msg: userText("again"), want: "helper"},
		{
			name:    "function response goes to the caller",
			history: []hist{user, {author: "sticky", content: functionCall("call-1", "lookup")}, said("helper")},
			msg:     functionResponse("call-1", "lookup"),
			want:    "sticky",
		},
		{
			name:    "function response to a rewound call goes as any message",
			history: []hist{in("r1", user), in("r1", hist{author: "sticky", content: functionCall("call-1", "lookup")}), rewind("r2", "r1"), in("r3", user), in("r3", said("helper"))},
			msg:     functionResponse("call-1", "lookup"),
			want:    "helper",
		},
		{
			name:    "function response to a call after a rewind goes to the caller",
			history: []hist{in("r1", user), in("r1", said("helper")), rewind("r2", "r1"), in("r3", user), in("r3", hist{author: "sticky", content: functionCall("call-2", "lookup")})},
			msg:     functionResponse("call-2", "lookup"),
			want:    "sticky",
		},
		{
			name:    "the agent of a rewound run is passed over",
			history: []hist{in("r1", user), in("r1", said("root")), in("r2", user), in("r2", said("helper")), rewind("r3", "r2")},
			msg:     userText("again"),
			want:    "root",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, db, k := newTestRunner(t, selectionTree(t))
			for _, h := range tc.history {
				ev := &agentrunnerv1.Event{Author: h.author, Content: h.content, InvocationId: h.inv}
				if h.rewind != "" {
					ev.Actions = &agentrunnerv1.EventActions{RewindBeforeInvocationId: h.rewind}
				}
				if _, err := db.AppendEvent(t.Context(), k, ev); err != nil {
					t.Fatal(err)
				}
			}
			res := mustRun(t, r, Request{UserID: k.User, SessionID: k.Session, NewMessage: tc.msg})
			if len(res.events) != 1 || res.events[0].GetAuthor() != tc.want {
				t.Fatalf("answered by %v, want %s", summary(res.events), tc.want)
			}
		})
	}
}

// transferTo returns a run function that hands the conversation to target.
func transferTo(target string) agent.RunFunc {
	return func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			ev := say("handing over to " + target)
			ev.Actions = &agentrunnerv1.EventActions{TransferToAgent: target}
			yield(ev, nil)
		}
	}
}

// TestTransferInRun checks that the runner runs a transfer's target in the
// same run, and what answers the next turn: the root, because a custom
// root is never resumable, so neither is anything below it.
func TestTransferInRun(t *testing.T) {
	helper := llm(t, llmagent.Config{Name: "helper"})
	root := mustCustom(t, agent.Config{Name: "root", SubAgents: []agent.Agent{helper}, Run: transferTo("helper")})
	r, db, k := newTestRunner(t, root)

	res := mustRun(t, r, request(k, "help me"))
	want := []string{"root: handing over to helper", "helper: I am helper #1"}
	if got := summary(res.events); !equalStrings(got, want) {
		t.Fatalf("first run: %q, want %q", got, want)
	}
	res = mustRun(t, r, request(k, "more"))
	if got := res.events[0].GetAuthor(); got != "root" {
		t.Fatalf("second run answered by %s, want root", got)
	}

	// Unknown targets are reported in-band.
	bad := mustCustom(t, agent.Config{Name: "root", Run: transferTo("nobody")})
	r2, err := New(Config{AppName: testApp, Root: bad, Store: db})
	if err != nil {
		t.Fatal(err)
	}
	res = mustRun(t, r2, request(k, "again"))
	if len(res.agentErrs) != 1 || !strings.Contains(res.agentErrs[0].Error(), `transfer to unknown agent "nobody"`) {
		t.Fatalf("agent errors %v, want one about the unknown target", res.agentErrs)
	}
}

// TestTransferredAgentAnswersNextTurn writes the history a transfer leaves
// (the transfer tool of LLM agents comes later) and checks that the target
// answers the following turns.
func TestTransferredAgentAnswersNextTurn(t *testing.T) {
	helper := llm(t, llmagent.Config{Name: "helper"})
	root := llm(t, llmagent.Config{Name: "root", SubAgents: []agent.Agent{helper}})
	r, db, k := newTestRunner(t, root)
	history := []*agentrunnerv1.Event{
		{Author: "user", Content: userText("I need help")},
		{Author: "root", Content: modelText("transferring"), Actions: &agentrunnerv1.EventActions{TransferToAgent: "helper"}},
		{Author: "helper", Content: modelText("helper here")},
	}
	for _, ev := range history {
		if _, err := db.AppendEvent(t.Context(), k, ev); err != nil {
			t.Fatal(err)
		}
	}
	for turn := range 2 {
		res := mustRun(t, r, request(k, "more"))
		if got := summary(res.events); len(got) != 1 || res.events[0].GetAuthor() != "helper" {
			t.Fatalf("turn %d answered by %q, want helper", turn, got)
		}
	}
}

// TestFunctionResponsesMustAnswerPendingCalls checks the replies the
// runner refuses before storing anything: a response to a call nobody
// waits on (unknown, answered by a tool, or already answered by the user),
// and a reply that leaves calls of its run unanswered.
func TestFunctionResponsesMustAnswerPendingCalls(t *testing.T) {
	call := func(ids ...string) *agentrunnerv1.Event {
		c := &agentrunnerv1.Content{Role: agent.RoleModel}
		for _, id := range ids {
			c.Parts = append(c.Parts, functionCall(id, "approve").GetParts()...)
		}
		return &agentrunnerv1.Event{Author: "sticky", InvocationId: "e-1", Content: c, LongRunningToolIds: ids}
	}
	answer := func(author string, ids ...string) *agentrunnerv1.Content {
		c := &agentrunnerv1.Content{Role: agent.RoleUser}
		for _, id := range ids {
			c.Parts = append(c.Parts, functionResponse(id, "approve").GetParts()...)
		}
		return c
	}
	tests := []struct {
		name    string
		history []*agentrunnerv1.Event
		msg     *agentrunnerv1.Content
		want    string // substring of the InvalidArgument error; empty when accepted
	}{
		{name: "unknown id", history: []*agentrunnerv1.Event{call("a")}, msg: answer("user", "zzz"), want: `["zzz"]`},
		{name: "one of two", history: []*agentrunnerv1.Event{call("a", "b")}, msg: answer("user", "a"), want: `unanswered: ["b"]`},
		{name: "already answered", history: []*agentrunnerv1.Event{call("a"), {Author: "user", Content: answer("user", "a")}}, msg: answer("user", "a"), want: `["a"]`},
		{name: "an interim result does not answer", history: []*agentrunnerv1.Event{call("a"), {Author: "sticky", Content: answer("sticky", "a")}}, msg: answer("user", "a")},
		{name: "both", history: []*agentrunnerv1.Event{call("a", "b")}, msg: answer("user", "b", "a")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, db, k := newTestRunner(t, selectionTree(t))
			for _, ev := range tc.history {
				if _, err := db.AppendEvent(t.Context(), k, ev); err != nil {
					t.Fatal(err)
				}
			}
			res := collect(t, r.Run(t.Context(), Request{UserID: k.User, SessionID: k.Session, NewMessage: tc.msg}))
			if tc.want == "" {
				if res.err != nil || len(res.events) != 1 || res.events[0].GetAuthor() != "sticky" {
					t.Fatalf("answered by %q, err %v; want sticky", summary(res.events), res.err)
				}
				return
			}
			if !errors.Is(res.err, store.ErrInvalidArgument) || !strings.Contains(res.err.Error(), tc.want) {
				t.Fatalf("error %v, want invalid argument naming %s", res.err, tc.want)
			}
			sess, _, err := db.GetSession(t.Context(), k, store.GetOptions{})
			if err != nil || sess.GetLastSequence() != uint64(len(tc.history)) {
				t.Fatalf("something was stored: last sequence %d, %v", sess.GetLastSequence(), err)
			}
		})
	}
}
