// Package storecopy copies every record of one store into another (bbolt
// to PostgreSQL, back, or bbolt to bbolt to compact a file): sessions
// with their events, tool-call ledgers, run records and artifacts (every
// version), the app and user state, the users' artifacts, the daily spend
// ledger and which sessions are in memory. It is what `agentrunner
// migrate-store` runs.
//
// Records are copied as stored, not replayed through the stores' write
// methods: a replay would renumber artifact versions, lose a session's
// initial state, count client appends as spend and give new times. The
// stores export and import their own rows (ExportSession, ImportSession
// in store/boltstore and store/pgstore), in this package's vocabulary,
// which imports neither of them.
//
// A session is imported in one transaction, so a copy killed at any point
// leaves every session either whole in the target or absent. A rerun
// (Options.Resume) starts after the checkpoint and finds the sessions
// copied since by ErrAlreadyExists: it compares their checksums with the
// source's instead of writing them again. The shared records (state,
// user artifacts, spend) are written last and replace what they name, so
// writing them twice gives the same result.
//
// Not copied: spend holds (budget reservations of model calls in flight,
// which bbolt keeps in memory and which expire within minutes), session
// leases and the PostgreSQL run queue (a server's live coordination),
// and evaluation results (store.EvalRunStore, EvalService's records).
// Stop the servers before a copy.
package storecopy

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Session is one session and what is stored with it.
type Session struct {
	Key store.SessionKey
	// Record is the session as stored: its own state (not the app's or
	// the user's), times, last and compacted sequences, totals.
	Record *agentrunnerv1.Session
	// Events are the session's events, sequence 1, 2, ..., in order.
	Events []*agentrunnerv1.Event
	// ToolCalls is the tool-call ledger, in any order.
	ToolCalls []*agentrunnerv1.ToolCall
	// Runs are the run records, in any order.
	Runs []Run
	// Artifacts are the session-scoped artifacts, every version.
	Artifacts []Artifact
	// InMemory: the session was added to memory (AddSessionToMemory);
	// the target indexes it again from its events.
	InMemory bool
}

// Run is a run record and where it sits in its session's history.
type Run struct {
	Record *agentrunnerv1.Run
	// Anchor is the session's last sequence when the record was first
	// written: runs are listed by it, then by create_time.
	Anchor uint64
}

// Artifact is one version of an artifact.
type Artifact struct {
	Filename string
	Meta     *agentrunnerv1.ArtifactVersion
	Part     *agentrunnerv1.Part
}

// Shared is what belongs to no one session.
type Shared struct {
	AppState      []AppState
	UserState     []UserState
	UserArtifacts []UserArtifact
	Spend         []SpendRow
}

// AppState is the "app:" state of an app.
type AppState struct {
	App   string
	State *structpb.Struct
}

// UserState is the "user:" state of a user of an app.
type UserState struct {
	App, User string
	State     *structpb.Struct
}

// UserArtifact is a version of a "user:" artifact.
type UserArtifact struct {
	App, User string
	Artifact
}

// SpendRow is one entry of the daily spend ledger: a user's (or, with
// User "", the app's) spend on a UTC day (store.DayLayout) with a model.
type SpendRow struct {
	App, User, Day, Model string
	Spend                 *agentrunnerv1.Spend
}

// Source is a store that exports its records.
type Source interface {
	// SessionKeys returns up to limit session keys after after (the zero
	// key: from the start), in key order (app, user, session, bytewise).
	SessionKeys(ctx context.Context, after store.SessionKey, limit int) ([]store.SessionKey, error)
	// ExportSession returns a session and what goes with it; ErrNotFound
	// when there is none.
	ExportSession(ctx context.Context, k store.SessionKey) (*Session, error)
	// ExportShared returns the records of no one session.
	ExportShared(ctx context.Context) (*Shared, error)
}

// Target is a store that imports records, and exports them to be checked.
type Target interface {
	Source
	// ImportSession writes s in one transaction, as exported, then adds
	// it to memory when s.InMemory. A session that exists already is
	// ErrAlreadyExists, and nothing is written.
	ImportSession(ctx context.Context, s *Session) error
	// ImportShared writes sh, replacing the records it names.
	ImportShared(ctx context.Context, sh *Shared) error
}

// det is the encoding checksums hash: deterministic, so that equal
// messages hash alike whichever store they were read from.
var det = proto.MarshalOptions{Deterministic: true}

// Checksum is the SHA-256 of a session's records, in an order of their
// own (runs by id, tool calls by call id, artifacts by name and version)
// whatever order a store exported them in.
func Checksum(s *Session) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q %t\n", s.Key.App, s.Key.User, s.Key.Session, s.InMemory)
	add := func(m proto.Message) error { return hashMessage(h, m) }
	if err := add(s.Record); err != nil {
		return "", err
	}
	for _, ev := range s.Events {
		if err := add(ev); err != nil {
			return "", err
		}
	}
	calls := slices.SortedFunc(slices.Values(s.ToolCalls), func(a, b *agentrunnerv1.ToolCall) int { return cmp.Compare(a.GetCallId(), b.GetCallId()) })
	for _, c := range calls {
		if err := add(c); err != nil {
			return "", err
		}
	}
	runs := slices.SortedFunc(slices.Values(s.Runs), func(a, b Run) int { return cmp.Compare(a.Record.GetRunId(), b.Record.GetRunId()) })
	for _, r := range runs {
		fmt.Fprintf(h, "anchor %d\n", r.Anchor)
		if err := add(r.Record); err != nil {
			return "", err
		}
	}
	for _, a := range sortArtifacts(s.Artifacts) {
		if err := hashArtifact(h, a); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func sortArtifacts(as []Artifact) []Artifact {
	return slices.SortedFunc(slices.Values(as), func(a, b Artifact) int {
		return cmp.Or(cmp.Compare(a.Filename, b.Filename), cmp.Compare(a.Meta.GetVersion(), b.Meta.GetVersion()))
	})
}

func hashArtifact(h hash.Hash, a Artifact) error {
	fmt.Fprintf(h, "artifact %q %d\n", a.Filename, a.Meta.GetVersion())
	if err := hashMessage(h, a.Meta); err != nil {
		return err
	}
	return hashMessage(h, a.Part)
}

// hashMessage hashes m's deterministic encoding, length first, so that
// no two sequences of messages hash alike.
func hashMessage(h hash.Hash, m proto.Message) error {
	b, err := det.Marshal(m)
	if err != nil {
		return fmt.Errorf("checksum: %w", err)
	}
	fmt.Fprintf(h, "%d:", len(b))
	h.Write(b)
	return nil
}

// SharedChecksum is the SHA-256 of the shared records, in an order of its
// own.
func SharedChecksum(sh *Shared) (string, error) {
	h := sha256.New()
	for _, a := range slices.SortedFunc(slices.Values(sh.AppState), func(a, b AppState) int { return cmp.Compare(a.App, b.App) }) {
		fmt.Fprintf(h, "app %q\n", a.App)
		if err := hashMessage(h, a.State); err != nil {
			return "", err
		}
	}
	for _, u := range slices.SortedFunc(slices.Values(sh.UserState), func(a, b UserState) int {
		return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.User, b.User))
	}) {
		fmt.Fprintf(h, "user %q %q\n", u.App, u.User)
		if err := hashMessage(h, u.State); err != nil {
			return "", err
		}
	}
	for _, u := range slices.SortedFunc(slices.Values(sh.UserArtifacts), func(a, b UserArtifact) int {
		return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.User, b.User), cmp.Compare(a.Filename, b.Filename), cmp.Compare(a.Meta.GetVersion(), b.Meta.GetVersion()))
	}) {
		fmt.Fprintf(h, "user artifact %q %q\n", u.App, u.User)
		if err := hashArtifact(h, u.Artifact); err != nil {
			return "", err
		}
	}
	for _, s := range slices.SortedFunc(slices.Values(sh.Spend), func(a, b SpendRow) int {
		return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.User, b.User), cmp.Compare(a.Day, b.Day), cmp.Compare(a.Model, b.Model))
	}) {
		fmt.Fprintf(h, "spend %q %q %q %q\n", s.App, s.User, s.Day, s.Model)
		// PostgreSQL keeps one token total per row: the usage's
		// total_token_count is hashed as that total, which bbolt's
		// ledger keeps apart.
		sp := s.Spend.CloneVT()
		if sp.Usage != nil {
			sp.Usage.TotalTokenCount = int32(sp.GetTotalTokens())
		}
		if err := hashMessage(h, sp); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Empty reports whether sh holds nothing.
func (sh *Shared) Empty() bool {
	return len(sh.AppState)+len(sh.UserState)+len(sh.UserArtifacts)+len(sh.Spend) == 0
}

// ErrTargetNotEmpty: the target holds records and the copy was not told
// to resume.
var ErrTargetNotEmpty = errors.New("the target store is not empty")
