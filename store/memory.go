package store

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// MemoryQuery is one search of a user's memory: the indexed events of the
// sessions added to memory, of one app and one user only.
type MemoryQuery struct {
	App, User string
	// Text is free text; its terms (MemoryTerms) are what is matched.
	Text string
	// ExcludeSession, when set, leaves that session out (the current one,
	// which an agent sees already).
	ExcludeSession string
	// Page bounds the hits (Size, capped at MaxPageSize; MaxBytes, their
	// events' encoded size) and continues a previous search (Token).
	Page Page
}

// MemoryHit is one remembered event.
type MemoryHit struct {
	SessionID string
	Event     *agentrunnerv1.Event
	// Score is the hit's relevance: higher is better.
	Score float64
}

// Memory term bounds. They keep an append's index writes bounded however
// large the event is.
const (
	// MaxTermBytes drops longer tokens (hashes, base64, ...): nobody
	// searches for them by hand.
	MaxTermBytes = 64
	// MaxTermsPerEvent bounds the distinct terms indexed for one event;
	// the first ones in the text are kept.
	MaxTermsPerEvent = 256
)

// stopWords are terms too common to tell events apart; indexing them
// would cost a posting per event for nothing.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "but": true, "by": true,
	"do": true, "for": true, "from": true, "has": true, "have": true, "i": true, "if": true, "in": true, "is": true,
	"it": true, "its": true, "me": true, "my": true, "of": true, "on": true, "or": true, "so": true, "that": true,
	"the": true, "this": true, "to": true, "was": true, "we": true, "what": true, "with": true, "you": true, "your": true,
}

// MemoryTerms splits text into lower-case terms of letters and digits,
// without stop words and over-long tokens, counting each term's
// occurrences. The first MaxTermsPerEvent distinct terms are kept. The
// index and the search both use it, so they always agree.
func MemoryTerms(text string) map[string]int {
	terms := make(map[string]int)
	for w := range strings.FieldsFuncSeq(strings.ToLower(text), isTermSep) {
		if stopWords[w] || len(w) > MaxTermBytes || !utf8.ValidString(w) {
			continue
		}
		if _, ok := terms[w]; !ok && len(terms) == MaxTermsPerEvent {
			continue
		}
		terms[w]++
	}
	return terms
}

func isTermSep(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// MemoryText is the text of an event that memory indexes: its content's
// non-thought text parts, one per line.
func MemoryText(ev *agentrunnerv1.Event) string {
	var sb strings.Builder
	for _, p := range ev.GetContent().GetParts() {
		if t, ok := p.GetData().(*agentrunnerv1.Part_Text); ok && !p.GetThought() && t.Text != "" {
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}

// MemoryTime is the time an indexed event is ranked by.
func MemoryTime(ev *agentrunnerv1.Event) time.Time { return ev.GetTimestamp().AsTime() }
