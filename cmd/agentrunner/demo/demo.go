// Package demo is a small app made of custom and workflow agents, with no
// model behind it, so that a fresh server has something to run: `agentrunner
// serve` without --config hosts it. It belongs to the binary, so the shipped
// binary imports nothing under examples/; examples/demo shows how to run it
// and forwards to it, so there is one copy of the tree. Its answers are
// deterministic; only the order of the two parallel analysts' events may
// vary.
//
// The tree:
//
//	greeter (custom)           greets, counts turns, hands over to pipeline
//	└── pipeline (sequential)
//	    ├── echo (custom)      repeats the message
//	    ├── analysis (parallel)
//	    │   ├── words (custom)   counts words   → state "words"
//	    │   └── letters (custom) counts letters → state "letters"
//	    ├── countdown (loop, at most 5 passes)
//	    │   └── tick (custom)  counts down from min(words, 3), escalates at 0
//	    └── summary (custom)   reports what the others left in state
package demo

import (
	"fmt"
	"iter"
	"strings"
	"unicode"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/apps"
)

// Name is the demo app's name.
const Name = "demo"

// App returns a new instance of the demo app. Each call builds a fresh
// tree, since an agent belongs to one tree only.
func App() apps.App {
	app, err := build()
	if err != nil {
		panic(fmt.Sprintf("demo: invalid agent tree: %v", err)) // a bug in this file
	}
	return app
}

func build() (apps.App, error) {
	custom := func(name, desc string, run agent.RunFunc, subs ...agent.Agent) (agent.Agent, error) {
		return agent.New(agent.Config{Name: name, Description: desc, Run: run, SubAgents: subs})
	}
	echo, err := custom("echo", "Repeats the message.", echoRun)
	if err != nil {
		return apps.App{}, err
	}
	words, err := custom("words", "Counts the words of the message.", countRun("words", countWords))
	if err != nil {
		return apps.App{}, err
	}
	letters, err := custom("letters", "Counts the letters of the message.", countRun("letters", countLetters))
	if err != nil {
		return apps.App{}, err
	}
	analysis, err := workflow.NewParallel(workflow.Config{Name: "analysis", Description: "Analyses the message in parallel branches.", SubAgents: []agent.Agent{words, letters}})
	if err != nil {
		return apps.App{}, err
	}
	tick, err := custom("tick", "Counts down by one; escalates at zero.", tickRun)
	if err != nil {
		return apps.App{}, err
	}
	countdown, err := workflow.NewLoop(workflow.LoopConfig{Name: "countdown", Description: "Counts down until liftoff.", MaxIterations: 5, SubAgents: []agent.Agent{tick}})
	if err != nil {
		return apps.App{}, err
	}
	summary, err := custom("summary", "Summarises the analysis.", summaryRun)
	if err != nil {
		return apps.App{}, err
	}
	pipeline, err := workflow.NewSequential(workflow.Config{Name: "pipeline", Description: "Echoes, analyses, counts down and summarises.", SubAgents: []agent.Agent{echo, analysis, countdown, summary}})
	if err != nil {
		return apps.App{}, err
	}
	greeter, err := custom("greeter", "Greets the user and hands over to the pipeline.", greeterRun, pipeline)
	if err != nil {
		return apps.App{}, err
	}
	return apps.App{Name: Name, Description: "A demo of custom and workflow agents; no model needed.", Root: greeter}, nil
}

// say is an agent's one event. Each agent of the demo says one thing and
// ends, so the event completes its turn: after a crash, recovery then
// knows whether the run's agents had finished (ResumeRun runs none twice).
func say(text string) *agentrunnerv1.Event {
	return &agentrunnerv1.Event{TurnComplete: true, Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{
		{Data: &agentrunnerv1.Part_Text{Text: text}},
	}}}
}

// message returns the text of the user's message.
func message(ctx agent.InvocationContext) string {
	var sb strings.Builder
	for _, p := range ctx.UserContent().GetParts() {
		if t := p.GetText(); t != "" {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(t)
		}
	}
	return sb.String()
}

// number reads a numeric state key, 0 when missing.
func number(ctx agent.InvocationContext, key string) int {
	v, _ := ctx.State().Get(key)
	return int(v.GetNumberValue())
}

// one yields a single event built by f, reporting an error instead if f
// fails.
func one(f func(ctx agent.InvocationContext) (*agentrunnerv1.Event, error)) agent.RunFunc {
	return func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			ev, err := f(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			yield(ev, nil)
		}
	}
}

var greeterRun = one(func(ctx agent.InvocationContext) (*agentrunnerv1.Event, error) {
	turns := number(ctx, "turns") + 1
	visits := number(ctx, "user:visits") + 1
	if err := ctx.State().Set("turns", turns); err != nil {
		return nil, err
	}
	if err := ctx.State().Set("user:visits", visits); err != nil {
		return nil, err
	}
	ev := say(fmt.Sprintf("Hello %s! This is turn %d of this session (message %d from you in this app). Handing over to the pipeline.", ctx.UserID(), turns, visits))
	ev.Actions = &agentrunnerv1.EventActions{TransferToAgent: "pipeline"}
	return ev, nil
})

var echoRun = one(func(ctx agent.InvocationContext) (*agentrunnerv1.Event, error) {
	return say(fmt.Sprintf("You said: %q", message(ctx))), nil
})

func countWords(s string) int { return len(strings.Fields(s)) }

func countLetters(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			n++
		}
	}
	return n
}

func countRun(key string, count func(string) int) agent.RunFunc {
	return one(func(ctx agent.InvocationContext) (*agentrunnerv1.Event, error) {
		n := count(message(ctx))
		if err := ctx.State().Set(key, n); err != nil {
			return nil, err
		}
		return say(count1(n, key) + "."), nil
	})
}

// tickRun keeps its count in a temp: key: it lasts for this invocation
// only, so every run counts down afresh.
var tickRun = one(func(ctx agent.InvocationContext) (*agentrunnerv1.Event, error) {
	left, ok := ctx.State().Get("temp:countdown")
	n := int(left.GetNumberValue())
	if !ok {
		n = min(number(ctx, "words"), 3)
	}
	if n <= 0 {
		ev := say("Liftoff!")
		ev.Actions = &agentrunnerv1.EventActions{Escalate: true}
		return ev, nil
	}
	if err := ctx.State().Set("temp:countdown", n-1); err != nil {
		return nil, err
	}
	return say(fmt.Sprintf("%d...", n)), nil
})

var summaryRun = one(func(ctx agent.InvocationContext) (*agentrunnerv1.Event, error) {
	return say(fmt.Sprintf("Summary: %s, %s, turn %d.", count1(number(ctx, "words"), "words"), count1(number(ctx, "letters"), "letters"), number(ctx, "turns"))), nil
})

// count1 writes n with its plural noun, or the singular for one: "1 word",
// "3 words".
func count1(n int, plural string) string {
	if n == 1 {
		return "1 " + strings.TrimSuffix(plural, "s")
	}
	return fmt.Sprintf("%d %s", n, plural)
}
