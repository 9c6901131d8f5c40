package store

import (
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// Scope names where a state key lives.
type Scope int

// The state scopes, decided by a key's prefix.
const (
	ScopeSession Scope = iota
	ScopeApp
	ScopeUser
	ScopeTemp
)

// ScopeOf returns the scope of a state key.
func ScopeOf(key string) Scope {
	switch {
	case strings.HasPrefix(key, AppPrefix):
		return ScopeApp
	case strings.HasPrefix(key, UserPrefix):
		return ScopeUser
	case strings.HasPrefix(key, TempPrefix):
		return ScopeTemp
	}
	return ScopeSession
}

// SplitDelta splits a state delta by scope. The returned maps share values
// with delta; keys keep their prefixes. Nil maps are returned for empty
// scopes.
func SplitDelta(delta *structpb.Struct) (session, app, user map[string]*structpb.Value) {
	for k, v := range delta.GetFields() {
		var m *map[string]*structpb.Value
		switch ScopeOf(k) {
		case ScopeSession:
			m = &session
		case ScopeApp:
			m = &app
		case ScopeUser:
			m = &user
		default:
			continue
		}
		if *m == nil {
			*m = make(map[string]*structpb.Value)
		}
		(*m)[k] = v
	}
	return session, app, user
}

// IsNull reports whether v is a JSON null, which deletes a key. A nil value
// counts as null.
func IsNull(v *structpb.Value) bool {
	if v == nil {
		return true
	}
	_, ok := v.GetKind().(*structpb.Value_NullValue)
	return ok || v.GetKind() == nil
}

// ApplyDelta applies delta to state in place: null values delete keys,
// others replace them. It reports whether anything changed.
func ApplyDelta(state *structpb.Struct, delta map[string]*structpb.Value) bool {
	changed := false
	for k, v := range delta {
		if IsNull(v) {
			if _, ok := state.Fields[k]; ok {
				delete(state.Fields, k)
				changed = true
			}
			continue
		}
		if state.Fields == nil {
			state.Fields = make(map[string]*structpb.Value)
		}
		if old, ok := state.Fields[k]; ok && proto.Equal(old, v) {
			continue
		}
		state.Fields[k] = v
		changed = true
	}
	return changed
}

// WithoutTemp returns delta without its "temp:" keys. It returns delta
// itself when there are none, and nil when nothing is left.
func WithoutTemp(delta *structpb.Struct) *structpb.Struct {
	n := 0
	for k := range delta.GetFields() {
		if ScopeOf(k) == ScopeTemp {
			n++
		}
	}
	if n == 0 {
		if len(delta.GetFields()) == 0 {
			return nil
		}
		return delta
	}
	if n == len(delta.GetFields()) {
		return nil
	}
	out := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(delta.Fields)-n)}
	for k, v := range delta.Fields {
		if ScopeOf(k) != ScopeTemp {
			out.Fields[k] = v
		}
	}
	return out
}

// AddUsage adds u's token counts to total, allocating total when it is
// nil, and returns it. Totals of sessions and runs, and the ledger's, are
// kept this way. A negative count adds nothing: totals only grow, so that
// no event can give back what was spent.
func AddUsage(total, u *agentrunnerv1.UsageMetadata) *agentrunnerv1.UsageMetadata {
	if u == nil {
		return total
	}
	if total == nil {
		total = &agentrunnerv1.UsageMetadata{}
	}
	total.PromptTokenCount += max(u.GetPromptTokenCount(), 0)
	total.CandidatesTokenCount += max(u.GetCandidatesTokenCount(), 0)
	total.ThoughtsTokenCount += max(u.GetThoughtsTokenCount(), 0)
	total.CachedContentTokenCount += max(u.GetCachedContentTokenCount(), 0)
	total.ToolUsePromptTokenCount += max(u.GetToolUsePromptTokenCount(), 0)
	total.TotalTokenCount += max(u.GetTotalTokenCount(), 0)
	total.CacheCreationTokenCount += max(u.GetCacheCreationTokenCount(), 0)
	return total
}

// EventTokens is what ev's model call adds to a 64-bit token total
// (Session.total_tokens, Run.total_tokens, Spend.total_tokens): its
// total_token_count, never less than zero.
func EventTokens(ev *agentrunnerv1.Event) int64 {
	return int64(max(ev.GetUsageMetadata().GetTotalTokenCount(), 0))
}

// MergeState returns session rec as callers see it: a copy whose state
// holds its own keys and the shared app and user scopes' (keys keep their
// prefixes). Every store keeps the shared scopes apart from the session,
// so every read of a session merges them back this one way.
func MergeState(rec *agentrunnerv1.Session, appState, userState *structpb.Struct) *agentrunnerv1.Session {
	out := rec.CloneVT()
	if out.State == nil {
		out.State = &structpb.Struct{}
	}
	if out.State.Fields == nil {
		out.State.Fields = make(map[string]*structpb.Value, len(appState.GetFields())+len(userState.GetFields()))
	}
	for key, v := range appState.GetFields() {
		out.State.Fields[key] = v
	}
	for key, v := range userState.GetFields() {
		out.State.Fields[key] = v
	}
	return out
}
