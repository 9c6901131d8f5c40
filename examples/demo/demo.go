// Package demo is an example: the demo app, a tree of custom and workflow
// agents with no model behind it, run on a runner over a bbolt file (see
// ExampleApp). The tree itself is defined once, in the binary's own
// package, cmd/agentrunner/demo, because `agentrunner serve` hosts it and
// the shipped binary imports nothing under examples/; read the agents
// there. This package forwards to it, so that programs and tests that
// import examples/demo keep working.
package demo

import (
	"github.com/agentrunner/agentrunner/cmd/agentrunner/demo"
	"github.com/agentrunner/agentrunner/runner/apps"
)

// Name is the demo app's name.
const Name = demo.Name

// App returns a new instance of the demo app; see cmd/agentrunner/demo.
func App() apps.App { return demo.App() }
