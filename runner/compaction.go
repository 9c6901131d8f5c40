package runner

import (
	"cmp"

	"github.com/agentrunner/agentrunner/runner/internal/turn"
	"github.com/agentrunner/agentrunner/runner/model"
)

// DefaultCompactionMaxEvents is the hard cap on a session's uncompacted
// events when Compaction.MaxEvents is zero.
const DefaultCompactionMaxEvents = 1000

// DefaultCompactionInstruction is what the summarizer is told when the app
// gives no instruction of its own.
const DefaultCompactionInstruction = "You condense a conversation between a user and AI agents so that the agents can go on without the original. " +
	"Write a concise summary that keeps every fact the user gave, every decision and result, the tools called and what they returned when it matters, " +
	"open questions and the user's preferences. If a summary of the earlier conversation is given, fold it in: your summary replaces it. " +
	"Answer with the summary alone."

// Compaction configures how a Runner condenses the older events of long
// sessions into compaction events (see EventCompaction), which LLM agents
// read in place of the events they cover. Compaction runs at the end of a
// run that ended without error, as its last step; its event is stored and
// streamed like any other. The stored events are never removed.
type Compaction struct {
	// Summarizer writes the summaries. Nil turns compaction off: agents
	// then see the whole history, however long.
	Summarizer model.Model
	// Instruction is the summarizer's system instruction; empty means
	// DefaultCompactionInstruction.
	Instruction string
	// Interval compacts once this many runs have stored events since the
	// last compaction; zero turns the trigger off.
	Interval int
	// Overlap is how many of the latest runs stay verbatim after a
	// compaction; less than Interval.
	Overlap int
	// TokenThreshold compacts when a model call of the run reported a
	// prompt of at least this many tokens; zero turns the trigger off.
	TokenThreshold int
	// MaxEvents is the hard cap: more uncompacted events than this are
	// compacted whatever the triggers say, with a warning. Zero means
	// DefaultCompactionMaxEvents; negative turns the cap off.
	MaxEvents int
}

// turn is c as a turn reads it, the defaults filled in.
func (c Compaction) turn() turn.Compaction {
	c.Instruction = cmp.Or(c.Instruction, DefaultCompactionInstruction)
	c.MaxEvents = cmp.Or(c.MaxEvents, DefaultCompactionMaxEvents)
	return turn.Compaction(c)
}
