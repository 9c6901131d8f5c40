package boltstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/agentrunner/agentrunner/store"
)

// Bucket names. Every bucket is created by Open; a missing one afterwards is
// corruption.
var (
	bucketMeta        = []byte("meta")
	bucketSessions    = []byte("sessions")
	bucketEvents      = []byte("events")
	bucketAppState    = []byte("app_state")
	bucketUserState   = []byte("user_state")
	bucketArtifacts   = []byte("artifacts")
	bucketBlobs       = []byte("blobs")
	bucketToolCalls   = []byte("tool_calls")
	bucketRunRecords  = []byte("run_records")
	bucketRunReqs     = []byte("run_requests")
	bucketMemSessions = []byte("memory_sessions")
	bucketMemPostings = []byte("memory_postings")
	bucketMemUsers    = []byte("memory_users")
	// bucketSpend is in spend.go.

	allBuckets = [][]byte{bucketMeta, bucketSessions, bucketEvents, bucketAppState, bucketUserState, bucketArtifacts, bucketBlobs, bucketToolCalls,
		bucketRunRecords, bucketRunReqs, bucketMemSessions, bucketMemPostings,
		bucketMemUsers, bucketSpend, bucketWebhooks}

	keySchemaVersion = []byte("schema_version")
)

// currentSchema is the layout this code reads and writes. Raise it with a
// new entry in schemaMigrations (and a test) whenever the layout changes.
const currentSchema = 10

// migration upgrades a file from schema version N to N+1 inside the open
// transaction.
type migration func(tx *bbolt.Tx) error

// schemaMigrations[i] upgrades version i+1 to i+2. Version 2 added the
// tool-call ledger (bucket tool_calls, built from the stored events);
// version 3 the run records (buckets runs, run_ids, run_requests and
// unfinished_runs, see migrateRuns); version 4 moved the records from
// runs into events (migrateRunsIntoEvents); version 5 added the memory
// index (migrateMemory); version 6 moved the records into run_records,
// by run id (migrateRunRecords); version 7 added the run index across
// sessions (migrateRunIndex, runindex.go); version 8 the daily spend
// ledger (bucket spend, migrateSpend); version 9 the webhook outbox
// (bucket webhook_outbox, migrateWebhooks); version 10 dropped the
// unfinished marks, which the run index's active entries replace
// (migrateUnfinishedMarks).
var schemaMigrations = []migration{migrateToolCalls, migrateRuns, migrateRunsIntoEvents, migrateMemory, migrateRunRecords, migrateRunIndex, migrateSpend, migrateWebhooks, migrateUnfinishedMarks}

// migrateMemory adds the memory buckets (memory.go), empty: no session of
// an older file is in memory. Open creates them before it migrates; the
// version is raised all the same so that an older binary, which would
// append to a session in memory without indexing and delete one without
// removing its postings, refuses the file.
func migrateMemory(tx *bbolt.Tx) error {
	for _, name := range [][]byte{bucketMemSessions, bucketMemPostings, bucketMemUsers} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// Options configure Open. The zero value is ready to use.
type Options struct {
	// Timeout bounds the wait for the file lock held by another process;
	// zero means one second.
	Timeout time.Duration
	// NoSync skips fsync on commit. Only for tests and benchmarks that do
	// not measure durability: a crash may lose acknowledged writes.
	NoSync bool
	// MaxBatch bounds how many writes share one transaction; zero means
	// 1024.
	MaxBatch int
	// CommitWindow is the longest a commit waits for more writes, as
	// PostgreSQL's commit_delay does, and it waits only when the last
	// batch was full: at least windowBatch writes, a sign that many
	// writers wait on each commit. Then a batch waits, up to the window,
	// until it holds as many writes as the last one. A batch of fewer
	// than 4 writes may linger for more when other writers are about, for
	// at most as long as the last commit took and twice the window (see
	// linger). A lone writer never waits. Zero means DefaultCommitWindow;
	// negative never waits.
	CommitWindow time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// NewID returns a new random id for sessions and events; nil means a
	// 128-bit random hex string.
	NewID func() string
	// Logger receives operational messages; nil means slog.Default().
	Logger *slog.Logger
	// OnCommit, when set, is told of every commit: how long it took
	// (fsync included) and how many writes it carried, run records queued
	// by PutRunLater included. It runs on the committer and must be quick
	// (a metric).
	OnCommit func(d time.Duration, writes int)
	// MaxItemBytes, when positive, bounds the encoded size of every item
	// the store keeps: an event, a session's own state, an app's or a
	// user's state, an artifact version. A write that would pass it is
	// refused (ErrInvalidArgument, naming the limit), so that every item
	// can be read back in a message of the size the server allows.
	MaxItemBytes int

	migrations []migration   // for tests; nil means schemaMigrations
	schema     int           // for tests; zero means currentSchema
	laterDelay time.Duration // for tests; zero means defaultLaterDelay
	noLinger   bool          // for benchmarks: small batches never linger
	mergeDelay time.Duration // for tests; zero means defaultMergeDelay
}

// defaultMergeDelay is how often pending memory records are moved into
// postings (see memory.go): seldom enough that a merge carries many
// events, whose postings of the same term then share pages.
const defaultMergeDelay = time.Second

// DefaultCommitWindow is Options.CommitWindow's default: about one
// fsync of a virtual disk, so that a full batch waits at most the time
// its commit takes anyway.
const DefaultCommitWindow = time.Millisecond

// windowBatch is the size from which a batch is full (Options.CommitWindow).
const windowBatch = 8

// defaultLaterDelay is how long a record queued by PutRunLater waits for
// another write to carry it before the committer writes it on its own.
const defaultLaterDelay = 20 * time.Millisecond

// Store is a store.Store on one bbolt file. It is safe for concurrent use.
type Store struct {
	db    *bbolt.DB
	opts  Options
	ops   chan *writeOp
	later runQueue  // records PutRunLater queued, not yet committed
	mem   memState  // sessions in memory with events to merge (memory.go)
	holds holdState // spend held by model calls in flight (hold.go)
	quit  chan struct{}
	done  chan struct{}
	// mergeDone is closed when mergeLoop has returned.
	mergeDone chan struct{}
	lingers   atomic.Int64 // batches that lingered (linger), for tests
	close     sync.Once
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the store at path, checks its schema
// version and migrates an older file.
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout == 0 {
		opts.Timeout = time.Second
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1024
	}
	if opts.CommitWindow == 0 {
		opts.CommitWindow = DefaultCommitWindow
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewID == nil {
		opts.NewID = randomID
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.migrations == nil {
		opts.migrations = schemaMigrations
	}
	if opts.schema == 0 {
		opts.schema = currentSchema
	}
	if opts.laterDelay <= 0 {
		opts.laterDelay = defaultLaterDelay
	}
	if opts.mergeDelay <= 0 {
		opts.mergeDelay = defaultMergeDelay
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout: opts.Timeout,
		NoSync:  opts.NoSync,
		// The freelist is rebuilt by scanning on open instead of being
		// written on every commit: one page less per fsync.
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { return initSchema(tx, opts) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s := &Store{
		db:   db,
		opts: opts,
		ops:  make(chan *writeOp),
		quit: make(chan struct{}),
		done: make(chan struct{}),

		mergeDone: make(chan struct{}),
	}
	s.later.init(opts.laterDelay)
	s.mem.init()
	if err := db.View(func(tx *bbolt.Tx) error { return recoverMemory(tx, &s.mem) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	go s.commitLoop()
	go s.mergeLoop()
	return s, nil
}

func initSchema(tx *bbolt.Tx, opts Options) error {
	fresh := tx.Bucket(bucketMeta) == nil
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	if fresh {
		return meta.Put(keySchemaVersion, binary.AppendUvarint(nil, uint64(opts.schema)))
	}
	v, n := binary.Uvarint(meta.Get(keySchemaVersion))
	if n <= 0 {
		return errors.New("schema version missing or corrupt")
	}
	if int(v) > opts.schema {
		return fmt.Errorf("schema version %d is newer than this binary supports (%d)", v, opts.schema)
	}
	for ; int(v) < opts.schema; v++ {
		if int(v)-1 >= len(opts.migrations) {
			return fmt.Errorf("no migration from schema version %d", v)
		}
		if err := opts.migrations[v-1](tx); err != nil {
			return fmt.Errorf("migrate schema %d to %d: %w", v, v+1, err)
		}
		opts.Logger.Info("migrated store schema", "from", v, "to", v+1)
	}
	return meta.Put(keySchemaVersion, binary.AppendUvarint(nil, v))
}

// SchemaVersion returns the schema version recorded in the file.
func (s *Store) SchemaVersion() (int, error) {
	var v uint64
	err := s.view(context.Background(), func(tx *bbolt.Tx) error {
		v, _ = binary.Uvarint(tx.Bucket(bucketMeta).Get(keySchemaVersion))
		return nil
	})
	return int(v), err
}

// Close stops accepting writes, waits for the committer to finish the
// writes it has taken and to write the run records PutRunLater queued,
// and closes the file.
func (s *Store) Close() error {
	var err error
	s.close.Do(func() {
		close(s.quit)
		<-s.done
		<-s.mergeDone
		err = s.db.Close()
	})
	return err
}

// DB exposes the underlying bbolt handle for checks and tools; callers must
// not write through it.
func (s *Store) DB() *bbolt.DB { return s.db }

// view runs fn in a read transaction.
func (s *Store) view(ctx context.Context, fn func(tx *bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.db.View(fn)
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return store.ErrClosed
	}
	return err
}

// A writeOp is one write. fn must check everything that can fail before it
// changes anything, so that returning an error leaves the transaction as it
// was and the other writes of the batch can still commit. An error from a
// bbolt write itself is wrapped in abortError; it aborts the batch, which is
// then retried one write per transaction.
type writeOp struct {
	fn   func(tx *bbolt.Tx) error
	done chan error
	at   time.Time // when it was handed over (linger)
}

type abortError struct{ err error }

func (e abortError) Error() string { return e.err.Error() }
func (e abortError) Unwrap() error { return e.err }

// put writes a key and turns a failure into an abortError.
func put(b *bbolt.Bucket, k, v []byte) error {
	if err := b.Put(k, v); err != nil {
		return abortError{fmt.Errorf("put %s: %w", b, err)}
	}
	return nil
}

// Fill factors of the events bucket's pages in a transaction. bbolt
// splits a full page at half by default, which leaves room for keys put
// anywhere. The keys of a session that sorts last (a lone session) go at
// the end of the bucket, where a half-split page is never written again:
// it stays half empty, and the tree grows twice the pages and a level
// sooner, which every commit then writes. So a transaction whose puts all
// append to the bucket's end splits at appendFill. Anywhere else pages
// still split at half: a session's page is often followed by another
// session's events, which pages split at 95% would push out a few at a
// time, at every append, into pages of their own. A bucket handle lives
// for one transaction, so its FillPercent also records what the
// transaction did: untouched, appending only, or mixedFill (a put landed
// before the end).
const (
	appendFill = 0.95
	mixedFill  = bbolt.DefaultFillPercent + 1e-9
)

// putEvent puts k in the events bucket b, setting b's fill factor.
func putEvent(b *bbolt.Bucket, k, v []byte) error {
	if b.FillPercent != mixedFill {
		if last, _ := b.Cursor().Last(); last == nil || bytes.Compare(k, last) > 0 {
			b.FillPercent = appendFill
		} else {
			b.FillPercent = mixedFill
		}
	}
	return put(b, k, v)
}

func del(b *bbolt.Bucket, k []byte) error {
	if err := b.Delete(k); err != nil {
		return abortError{fmt.Errorf("delete: %w", err)}
	}
	return nil
}

// write runs fn in the committer and returns once its transaction is on
// disk (or failed). It waits for the outcome even when ctx is cancelled
// after the write was handed over, so that a reported failure never hides
// a committed write.
func (s *Store) write(ctx context.Context, fn func(tx *bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := &writeOp{fn: fn, done: make(chan error, 1), at: time.Now()}
	select {
	case s.ops <- op:
	case <-s.quit:
		return store.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-op.done
}

// commitLoop is the single writer. It takes one write, then every write
// already waiting (up to MaxBatch), and commits them together: the batch
// grows with the load while the fsync runs; a batch smaller than the last
// full one waits for the commit window, a small one may linger. The run
// records PutRunLater queued ride along with the next commit, whatever it
// writes: records are keyed by run id, which starts with the creation
// time, so the records of a commit share the last pages of run_records.
// When no write comes within laterDelay, the queue's timer commits them
// alone.
func (s *Store) commitLoop() {
	defer close(s.done)
	batch := make([]*writeOp, 0, s.opts.MaxBatch)
	window := newWindow(s.opts.CommitWindow)
	var (
		last  int           // writes in the last batch
		took  time.Duration // how long its commit took
		prev  time.Time     // when its last write was handed over
		small linger
	)
	for {
		batch = batch[:0]
		select {
		case op := <-s.ops:
			batch = s.drain(append(batch, op))
			switch n := len(batch); {
			case last >= windowBatch && n < last:
				batch = s.fill(batch, last, window, s.opts.CommitWindow)
			case (last >= 2 || op.at.Sub(prev) < took) && n < lingerBatch && !s.opts.noLinger && small.ready():
				s.lingers.Add(1)
				batch = s.fill(batch, lingerBatch, window, min(took, 2*s.opts.CommitWindow))
				small.gained(len(batch) > n)
			}
			last, prev = len(batch), batch[len(batch)-1].at
		case <-s.later.due():
			s.later.fired() // commit what is queued, on its own
			s.commit(nil)
			continue
		case <-s.quit:
			s.later.close()
			s.commit(nil)
			return
		}
		took = s.commit(batch)
	}
}

// lingerBatch is the size a small batch lingers for (see linger).
const lingerBatch = 4

// maxLingerSkip bounds the chances to linger that a fruitless linger
// skips.
const maxLingerSkip = 64

// linger decides when a small batch waits for more writes. Runs that
// arrive spread out (a model takes seconds, so a busy server's runs start
// and end one at a time) commit a write or two each, and every commit
// pays, whatever it carries, two fdatasyncs, the meta page and the pages
// each commit copies anyway: the root of the buckets and their branch
// pages, the last leaves of the run records and of the run index. So when
// the last commit carried two writes or more, or when this batch's first
// write came sooner after the last one than that commit took (other
// writers are about: a lone writer's next write comes after its commit),
// a batch of fewer than lingerBatch waits for more, for at most as long
// as the last commit took and twice the commit window: a write waits for
// at most about one commit more, and a lone writer never waits. Writers
// that wait on each other gain nothing by it (a few sessions, each
// waiting for its commit before it writes again, are all in the batch
// already): a linger that gains no write skips the next chances to
// linger, twice as many each time up to maxLingerSkip, so that they
// seldom pay for it; a linger that gains one starts afresh.
type linger struct {
	skip int // chances left to skip
	next int // chances the next fruitless linger skips
}

// ready reports whether this chance to linger is taken.
func (l *linger) ready() bool {
	if l.skip > 0 {
		l.skip--
		return false
	}
	return true
}

// gained records whether a linger gained writes.
func (l *linger) gained(ok bool) {
	if ok {
		l.next = 0
		return
	}
	l.next = min(max(2*l.next, 1), maxLingerSkip)
	l.skip = l.next
}

// fill adds writes to batch as they come until it holds want (at most
// MaxBatch), or for at most d, or until the store closes: the adaptive
// commit window (Options.CommitWindow) and the linger of small batches.
func (s *Store) fill(batch []*writeOp, want int, w *window, d time.Duration) []*writeOp {
	want = min(want, s.opts.MaxBatch)
	if w == nil || d <= 0 {
		return batch
	}
	w.start(d)
	defer w.stop()
	for len(batch) < want {
		select {
		case op := <-s.ops:
			batch = s.drain(append(batch, op))
		case <-w.t.C:
			return batch
		case <-s.quit:
			return batch
		}
	}
	return batch
}

// window is the committer's reused timer of the commit window; nil when
// commits never wait.
type window struct {
	t *time.Timer
}

func newWindow(d time.Duration) *window {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &window{t: t}
}

// start starts a wait of d.
func (w *window) start(d time.Duration) { w.t.Reset(d) }

// stop stops the timer; since Go 1.23 a stopped or reset timer's channel
// holds no stale value, so the next start begins afresh.
func (w *window) stop() { w.t.Stop() }

// drain adds every write already waiting to batch, up to MaxBatch.
func (s *Store) drain(batch []*writeOp) []*writeOp {
	for len(batch) < s.opts.MaxBatch {
		select {
		case op := <-s.ops:
			batch = append(batch, op)
		default:
			return batch
		}
	}
	return batch
}

// commit writes the queued run records and then batch in one
// transaction and tells every write its outcome. The queued records come
// first, so that a write of the same run in batch wins; reads stop
// overlaying them once they are committed, before any write of batch is
// acknowledged. It returns how long it took until then: a write's next
// write comes after that, however late the committer runs afterwards
// (linger).
func (s *Store) commit(batch []*writeOp) time.Duration {
	start := time.Now()
	queued := s.later.take()
	errs := s.commitBatch(batch, queued)
	s.later.written()
	took := time.Since(start)
	for i, op := range batch {
		op.done <- errs[i]
	}
	return took
}

// commitBatch runs one transaction and returns the outcome of each write.
func (s *Store) commitBatch(batch []*writeOp, queued []*runWrite) []error {
	errs := make([]error, len(batch))
	if len(batch) == 0 && len(queued) == 0 {
		return errs
	}
	var aborted error
	start := time.Now()
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if aborted = s.writeQueued(tx, queued); aborted != nil {
			return aborted
		}
		for i, op := range batch {
			errs[i] = op.fn(tx)
			var ae abortError
			if errors.As(errs[i], &ae) {
				aborted = ae.err
				return ae.err
			}
		}
		return nil
	})
	if aborted != nil && len(batch)+len(queued) > 1 {
		// One write failed half-way; give every write its own transaction
		// so that the others are not lost with it.
		s.opts.Logger.Warn("batch aborted, retrying writes one by one", "err", aborted)
		for _, q := range queued {
			s.commitBatch(nil, []*runWrite{q})
		}
		for i, op := range batch {
			errs[i] = s.commitBatch([]*writeOp{op}, nil)[0]
		}
		return errs
	}
	if err != nil {
		for _, q := range queued {
			s.opts.Logger.Error("queued run record lost", "run", q.rec.GetRunId(), "err", err)
		}
		for i := range errs {
			errs[i] = fmt.Errorf("commit: %w", err)
		}
		return errs
	}
	if s.opts.OnCommit != nil {
		s.opts.OnCommit(time.Since(start), len(batch)+len(queued))
	}
	return errs
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}
