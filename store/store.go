// Package store holds the storage vocabulary of agentrunner: session keys,
// options, the sentinel errors every implementation returns, the state-scope
// rules, and the Store interface that the conformance suite in
// store/storetest checks. Two implementations pass it: store/boltstore, an
// embedded bbolt file that one process owns (the default), and
// store/pgstore, PostgreSQL that several replicas share, which also hands
// out session leases (SessionLeaser, lease.go), keeps the run queue
// (RunQueue, queue.go) and notifies every replica of changes (RunNotifier).
// The runner decides from these interfaces, once, whether its runs share
// the store (runner/internal/replica).
//
// The data model is the generated agentrunner.v1 messages: Session, Event,
// Part and ArtifactVersion are stored and returned as they are.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// Sentinel errors. Implementations wrap them with context
// (fmt.Errorf("session %s: %w", k, ErrNotFound)); callers test with errors.Is.
var (
	// ErrNotFound: the session, artifact or version does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a session with the requested id exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrInvalidArgument: the input can never succeed as given, for example
	// a partial event, an empty key field or a malformed page token.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("store closed")
)

// State key prefixes. A key's prefix decides where it is stored.
const (
	// AppPrefix marks state shared by every user and session of an app.
	AppPrefix = "app:"
	// UserPrefix marks state shared by every session of a user, and
	// artifacts shared by every session of a user.
	UserPrefix = "user:"
	// TempPrefix marks state that lives for one invocation and is never
	// stored.
	TempPrefix = "temp:"
)

// SessionKey addresses one session.
type SessionKey struct {
	App, User, Session string
}

func (k SessionKey) String() string {
	return fmt.Sprintf("%s/%s/%s", k.App, k.User, k.Session)
}

// Validate reports an ErrInvalidArgument naming the first empty field.
func (k SessionKey) Validate() error {
	switch {
	case k.App == "":
		return fmt.Errorf("app_name is empty: %w", ErrInvalidArgument)
	case k.User == "":
		return fmt.Errorf("user_id is empty: %w", ErrInvalidArgument)
	case k.Session == "":
		return fmt.Errorf("session_id is empty: %w", ErrInvalidArgument)
	}
	return nil
}

// GetOptions selects the events GetSession returns.
type GetOptions struct {
	// NumRecentEvents, when positive, keeps only the most recent N events.
	NumRecentEvents int
	// AfterSequence keeps only events with a greater sequence.
	AfterSequence uint64
	// AfterTime, when set, keeps only events whose timestamp is strictly
	// after it (as well as after AfterSequence); nil keeps every time.
	// A pointer, not a zero time.Time for "none": the zero instant
	// (0001-01-01T00:00:00Z) is a time a caller may filter on like any
	// other. Every event is tested: a caller may set an event's
	// timestamp, so timestamps are not known to grow with the sequence.
	AfterTime *time.Time
	// MaxBytes, when positive, bounds the size of the events returned
	// (see ItemBytes): the newest events that fit are kept and older ones
	// left out. Events are numbered 1..last_sequence without gaps, so a
	// caller tells what was left out by the first sequence it got.
	MaxBytes int
}

// EventFilter selects the events ListEvents lists: those with a greater
// sequence than AfterSequence and, when AfterTime is set (whatever its
// value, the zero instant included), a timestamp strictly after it.
type EventFilter struct {
	AfterSequence uint64
	AfterTime     *time.Time
}

// Keeps reports whether the filter's time test keeps an event with
// timestamp ts (its sequence is tested apart).
func (f EventFilter) Keeps(ts time.Time) bool {
	return f.AfterTime == nil || ts.After(*f.AfterTime)
}

// ArtifactKey validates the key an artifact method is given for
// filename ("" for ListArtifacts, which lists every name): a "user:"
// filename, and a listing, need no session (an empty k.Session is the
// user's scope); any other filename does. needSession is whether k names
// a session, which must then exist.
func ArtifactKey(k SessionKey, filename string) (needSession bool, err error) {
	if k.Session != "" || (filename != "" && ScopeOf(filename) != ScopeUser) {
		return true, k.Validate()
	}
	switch {
	case k.App == "":
		return false, fmt.Errorf("app_name is empty: %w", ErrInvalidArgument)
	case k.User == "":
		return false, fmt.Errorf("user_id is empty: %w", ErrInvalidArgument)
	}
	return false, nil
}

// Page selects one page of a listing.
type Page struct {
	// Size is the maximum number of items; 0 means DefaultPageSize and it is
	// capped at MaxPageSize.
	Size int
	// Token continues a previous listing; empty starts at the beginning.
	Token string
	// MaxBytes, when positive, bounds the size of the page's items (see
	// ItemBytes): the page ends before the item that would pass it, and
	// the listing goes on with the next page. A page holds at least one
	// item, however large, so that a listing always moves on.
	MaxBytes int
}

// ItemBytes is what an item of encoded size n adds to a page or a
// response: its encoding and its framing as a repeated field (a tag and a
// length, 6 bytes for an item of up to 256 MiB), rounded up.
func ItemBytes(n int) int { return n + 8 }

// Page size bounds shared by every listing.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// Limit returns the effective page size.
func (p Page) Limit() int {
	switch {
	case p.Size <= 0:
		return DefaultPageSize
	case p.Size > MaxPageSize:
		return MaxPageSize
	}
	return p.Size
}

// Store is the whole storage contract. Every method checks ctx before it
// starts and returns errors wrapping the sentinels above.
type Store interface {
	// CreateSession creates a session. An empty k.Session gets a random id.
	// "app:" and "user:" keys of state update the shared scopes; "temp:" keys
	// are dropped. Returns ErrAlreadyExists when the id is taken.
	CreateSession(ctx context.Context, k SessionKey, state *structpb.Struct) (*agentrunnerv1.Session, error)
	// GetSession returns the session with merged state and the events that
	// opts select, oldest first. Returns ErrNotFound.
	GetSession(ctx context.Context, k SessionKey, opts GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error)
	// ListSessions lists sessions of app (and of user, when not empty) in
	// key order, with merged state. It returns the next page token, empty
	// at the end.
	ListSessions(ctx context.Context, app, user string, page Page) ([]*agentrunnerv1.Session, string, error)
	// DeleteSession deletes a session, its events and its session-scoped
	// artifacts. Returns ErrNotFound.
	DeleteSession(ctx context.Context, k SessionKey) error
	// AppendEvent durably appends a complete event and applies its state
	// delta in one transaction, and returns the stored copy with sequence,
	// id and timestamp set and "temp:" keys removed. The input is not
	// modified. Partial events are rejected with ErrInvalidArgument; a
	// missing session is ErrNotFound.
	AppendEvent(ctx context.Context, k SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error)
	// AppendEventOnce appends ev as AppendEvent does, unless the session
	// already holds an event with ev's id (a caller's retry, a replay):
	// then an event of the same content (every field but the sequence,
	// and the timestamp when ev has none) is returned as stored, with
	// existed true, and one of other content is ErrAlreadyExists naming
	// its sequence. An empty id always appends. The id is looked for among
	// the session's events, with no index: the runner, whose event ids
	// are fresh, appends with AppendEvent and pays nothing for it.
	//
	// It is the client's append (SessionService.AppendEvent): the event
	// is stored as given, usage_metadata and cost included, but they are
	// the client's word, not spend: they add nothing to the session's
	// totals (usage, cost, total_tokens) nor to the ledger (SpendStore),
	// which only the runner's appends (AppendEvent, AppendRunEvent) write.
	AppendEventOnce(ctx context.Context, k SessionKey, ev *agentrunnerv1.Event) (stored *agentrunnerv1.Event, existed bool, err error)
	// ListEvents pages through the events that after selects, oldest
	// first. A page token continues after the last event listed; after's
	// sequence is then ignored, its time still applies.
	ListEvents(ctx context.Context, k SessionKey, after EventFilter, page Page) ([]*agentrunnerv1.Event, string, error)
	// ListToolCalls returns the session's tool-call ledger in call order:
	// every function call (with an id) its events made, closed by the
	// event that answered it, kept by AppendEvent in the same transaction
	// as the event. A call listed in its event's long_running_tool_ids
	// waits for the caller: only a "user" event's response closes it. A
	// second answer changes nothing. DeleteSession deletes the ledger.
	// Returns ErrNotFound.
	ListToolCalls(ctx context.Context, k SessionKey) ([]*agentrunnerv1.ToolCall, error)

	// SaveArtifact stores a new version of an artifact of an existing
	// session; "user:" filenames are shared by all of the user's sessions.
	//
	// For a "user:" filename the artifact methods need no session: an
	// empty k.Session addresses the user's scope (ListArtifacts with an
	// empty k.Session lists only the user's "user:" artifacts). A session
	// that is given must exist (ErrNotFound), as it always had to; it
	// does not change which artifact a "user:" filename names. Other
	// filenames require k.Session (ErrInvalidArgument).
	SaveArtifact(ctx context.Context, k SessionKey, filename string, part *agentrunnerv1.Part) (*agentrunnerv1.ArtifactVersion, error)
	// LoadArtifact returns a version of an artifact; version 0 is the latest.
	LoadArtifact(ctx context.Context, k SessionKey, filename string, version int64) (*agentrunnerv1.Part, *agentrunnerv1.ArtifactVersion, error)
	// ListArtifacts lists the latest version of every artifact visible in
	// the session, ordered by filename.
	ListArtifacts(ctx context.Context, k SessionKey, page Page) ([]*agentrunnerv1.ArtifactVersion, string, error)
	// ListArtifactVersions lists the versions of one artifact, newest first.
	ListArtifactVersions(ctx context.Context, k SessionKey, filename string, page Page) ([]*agentrunnerv1.ArtifactVersion, string, error)
	// DeleteArtifact deletes one version of an artifact, or every version
	// when version is 0. Deleting the latest version makes the one before
	// it the latest. A missing artifact or version is ErrNotFound. Version
	// numbers come from the latest: the next save after the latest was
	// deleted gets that number again.
	DeleteArtifact(ctx context.Context, k SessionKey, filename string, version int64) error

	RunStore
	SpendStore

	// Close releases the store, first writing what PutRunLater queued.
	// Calls after Close return ErrClosed.
	Close() error
}

// RunStore keeps run records (agentrunner.v1.Run): one per run, keyed by
// its session and run_id, listed newest first: by the point of the
// session's history where the record was first written (a run created
// later is first written later), then by create_time. A record's
// create_time never changes once written. Records go with their session
// (DeleteSession deletes them).
//
// A run's request_id is unique within its session: writing a record whose
// request_id another run of the session holds is ErrAlreadyExists, and the
// error names that run.
type RunStore interface {
	// AppendRunEvent appends ev as AppendEvent does and, in the same
	// transaction, writes run with last_sequence set to the event's
	// sequence (and first_sequence too when it is zero). It returns the
	// stored event and the stored run, copies of their own. The session
	// must exist (ErrNotFound); run must belong to it (ErrInvalidArgument).
	AppendRunEvent(ctx context.Context, k SessionKey, ev *agentrunnerv1.Event, run *agentrunnerv1.Run) (*agentrunnerv1.Event, *agentrunnerv1.Run, error)
	// PutRun durably writes a run record on its own: a pending run, or a
	// status change that stores no event. The session must exist
	// (ErrNotFound).
	PutRun(ctx context.Context, run *agentrunnerv1.Run) error
	// PutRunLater queues a run record, typically a run's final status,
	// and returns at once: it is written with the store's next commit, or
	// on its own after a short delay, so that it costs no fsync of its
	// own. Reads see it at once. A crash before it is written loses it;
	// the record then shows the state written before (a run still
	// RUNNING, which recovery marks INTERRUPTED). A record of a session
	// deleted meanwhile is dropped. The store may keep run itself until
	// then: the caller must not change it afterwards (a run's final
	// record, which its readers share, never changes).
	PutRunLater(run *agentrunnerv1.Run)
	// GetRun returns a run by id; ErrNotFound when there is none.
	GetRun(ctx context.Context, runID string) (*agentrunnerv1.Run, error)
	// FindRunByRequest returns the session's run with the request_id;
	// ErrNotFound when there is none.
	FindRunByRequest(ctx context.Context, k SessionKey, requestID string) (*agentrunnerv1.Run, error)
	// ListRuns pages through a session's runs, newest first. Returns
	// ErrNotFound for a missing session.
	ListRuns(ctx context.Context, k SessionKey, page Page) ([]*agentrunnerv1.Run, string, error)
	// ListRunsOf pages through the runs f selects, newest first. With a
	// session, it lists as ListRuns does (the same order and page tokens)
	// and a missing session is ErrNotFound. Without one it lists across
	// sessions, by create_time then run_id, both descending, never a walk
	// of their sessions; a filter of active statuses only
	// (RunFilter.OnlyActive) walks an index of active runs, whatever the
	// number of finished ones. Any other filter reads the status of every
	// run of the scope (PostgreSQL, by an index of each app's and each
	// user's runs) or, on bbolt, of every run of the store, keeping a
	// page's worth in memory: its cost grows with the store's runs. A page
	// token continues the listing it came from (the same app, user and
	// session); the statuses may change between pages.
	ListRunsOf(ctx context.Context, f RunFilter, page Page) ([]*agentrunnerv1.Run, string, error)
	// ListUnfinishedRuns returns every run of the store whose status is
	// RUN_STATUS_PENDING or RUN_STATUS_RUNNING, oldest first (by
	// create_time): what a restart must recover. It reads an index of
	// those runs, not every record.
	ListUnfinishedRuns(ctx context.Context) ([]*agentrunnerv1.Run, error)
}

// RunKey returns the key of the session a run belongs to.
func RunKey(r *agentrunnerv1.Run) SessionKey {
	return SessionKey{App: r.GetAppName(), User: r.GetUserId(), Session: r.GetSessionId()}
}
