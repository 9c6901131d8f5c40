package pgstore

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrunner/agentrunner/store"
)

// Options configure Open. The zero value is ready to use.
type Options struct {
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// NewID returns a new random id for sessions and events; nil means a
	// 128-bit random hex string.
	NewID func() string
	// Logger receives operational messages; nil means slog.Default().
	Logger *slog.Logger
	// MaxItemBytes, when positive, bounds the encoded size of every item
	// the store keeps, as boltstore.Options.MaxItemBytes does.
	MaxItemBytes int
	// LaterTimeout bounds the write of a record PutRunLater queued;
	// zero means 30 seconds.
	LaterTimeout time.Duration
	// OnCommit, when set, is told of every committed write transaction:
	// how long it took from BEGIN to the COMMIT's answer (the WAL flush
	// included) and how many writes it carried (a batch, batch.go), as
	// boltstore's OnCommit reports its commits. It must be quick (a metric).
	OnCommit func(d time.Duration, writes int)
}

// Store is a store.Store on a PostgreSQL database. It is safe for
// concurrent use; several processes may share one database.
type Store struct {
	pool      *pgxpool.Pool
	opts      Options
	closed    atomic.Bool
	closeOnce sync.Once
	// notes is the listening connection's fan-out (notify.go).
	notes listener
	// batch holds the pipelined writes waiting for a batch (batch.go).
	batch batcher
}

var _ store.Store = (*Store)(nil)

// IsURL reports whether data names a PostgreSQL database (a postgres://
// or postgresql:// URL) rather than a file.
func IsURL(data string) bool {
	return strings.HasPrefix(data, "postgres://") || strings.HasPrefix(data, "postgresql://")
}

// Open connects to the database at url (a libpq URL or key=value string;
// pool settings such as pool_max_conns and connect_timeout come from it,
// see pgxpool.ParseConfig), applies the migrations it lacks, and returns
// the store, which owns the pool.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	pool, err := Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	s, err := New(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// DefaultMaxConns is the pool size when the URL sets no pool_max_conns,
// in place of pgx's max(4, cores): appends wait on WAL flushes rather than
// on CPU, and the commits in flight share a flush (PostgreSQL's group
// commit), so concurrent sessions need more connections than cores
// (256 sessions of agentrunner bench: 2 to 3 times the runs/s of a pool of
// 4). Three replicas at this size stay under PostgreSQL's default
// max_connections of 100.
const DefaultMaxConns = 24

// Connect opens a pool on url and checks that the database answers.
func Connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The error quotes the URL, its password redacted only as well
		// as a malformed URL allows: keep what follows the quote.
		msg := err.Error()
		if i := strings.LastIndex(msg, "`: "); i >= 0 {
			msg = msg[i+3:]
		} else {
			msg = "malformed"
		}
		return nil, fmt.Errorf("parse PostgreSQL URL: %s: %w", msg, store.ErrInvalidArgument)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to PostgreSQL %s:%d/%s: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, err)
	}
	return pool, nil
}

// New returns a store on pool, after applying the migrations it lacks.
// Close closes the pool.
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewID == nil {
		opts.NewID = randomID
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LaterTimeout <= 0 {
		opts.LaterTimeout = 30 * time.Second
	}
	if _, err := Migrate(ctx, pool, opts.Logger); err != nil {
		return nil, err
	}
	s := &Store{pool: pool, opts: opts}
	if err := backfillRunStatus(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

// Pool exposes the connection pool for checks and tools; callers must not
// write through it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool; calls after Close return store.ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.notes.stopListening()
		s.pool.Close()
	})
	return nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded SQL file, numbered by its name's prefix.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in order. Names are
// NNNN_what.sql, numbered 1, 2, 3, ... without gaps.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	out := make([]migration, 0, len(names))
	for i, path := range names {
		name := strings.TrimPrefix(path, "migrations/")
		num, _, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v != i+1 {
			return nil, fmt.Errorf("migration %s: want number %04d", name, i+1)
		}
		b, err := migrationFiles.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	return out, nil
}

// migrationLock is the key of the advisory lock Migrate holds: one
// migrator at a time per database.
const migrationLock int64 = 0x61676e7472756e // "agntrun"

// Migrate applies the embedded migrations the database lacks, each in a
// transaction of its own, holding an advisory lock so that concurrent
// callers (replicas starting together) apply each exactly once. It
// returns the names applied; log (nil: slog.Default()) says each. A database that records a migration this
// binary does not know was migrated by a newer one: refused.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) ([]string, error) {
	if log == nil {
		log = slog.Default()
	}
	all, err := migrations()
	if err != nil {
		return nil, fmt.Errorf("embedded migrations: %w", err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return nil, fmt.Errorf("migrate: take the migration lock: %w", err)
	}
	defer func() {
		// A session lock outlives a cancelled ctx: release it regardless.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", migrationLock); err != nil {
			conn.Conn().Close(uctx) // the lock goes with the connection
		}
	}()
	return applyMigrations(ctx, conn.Conn(), all, log)
}

// applyMigrations applies, on conn that holds the migration lock, those
// of all that schema_migrations does not list.
func applyMigrations(ctx context.Context, conn *pgx.Conn, all []migration, log *slog.Logger) ([]string, error) {
	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`
	if _, err := conn.Exec(ctx, create); err != nil {
		return nil, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	if current > len(all) {
		return nil, fmt.Errorf("migrate: the database is at schema version %d, newer than this binary supports (%d)", current, len(all))
	}
	var applied []string
	for _, m := range all[current:] {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name)
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("migrate: apply %s: %w", m.name, err)
		}
		log.Info("applied store migration", "migration", m.name)
		applied = append(applied, m.name)
	}
	return applied, nil
}

// SchemaVersion returns the number of the last migration applied.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.query(ctx, func() error {
		return s.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&v)
	})
	return v, err
}

// check is the start of every method: ErrClosed after Close, and the
// context's error when it is done.
func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

// query runs fn, a read on the pool, after check.
func (s *Store) query(ctx context.Context, fn func() error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return s.mapErr(fn())
}

// inTx runs fn in a write transaction, committed when fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	start := time.Now()
	if err := pgx.BeginFunc(ctx, s.pool, fn); err != nil {
		return s.mapErr(err)
	}
	s.committed(start, 1)
	return nil
}

// committed tells OnCommit of a write transaction begun at start.
func (s *Store) committed(start time.Time, writes int) {
	if s.opts.OnCommit != nil {
		s.opts.OnCommit(time.Since(start), writes)
	}
}

// mapErr turns the errors of a pool closed under a call into ErrClosed
// and a unique violation into ErrAlreadyExists.
func (s *Store) mapErr(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrAlreadyExists), errors.Is(err, store.ErrInvalidArgument), errors.Is(err, store.ErrFenced):
		return err
	case s.closed.Load():
		return fmt.Errorf("%w: %v", store.ErrClosed, err)
	case errors.As(err, &pe) && pe.Code == "23505":
		return fmt.Errorf("%s: %w", pe.Detail, store.ErrAlreadyExists)
	}
	return err
}

// maxKeyPart bounds each string of a key, as in the bbolt store.
const maxKeyPart = 1024

// checkParts refuses key strings over maxKeyPart and those PostgreSQL's
// text cannot hold (see checkText).
func checkParts(parts ...string) error {
	for _, p := range parts {
		if err := checkPart(p); err != nil {
			return err
		}
	}
	return nil
}

// checkPart is checkParts for one part: the store.KeyCheck of this store.
func checkPart(p string) error {
	if len(p) > maxKeyPart {
		return fmt.Errorf("key part of %d bytes exceeds %d: %w", len(p), maxKeyPart, store.ErrInvalidArgument)
	}
	return checkText(p)
}

// checkText refuses a string PostgreSQL's text cannot hold: one with a
// NUL byte or invalid UTF-8.
func checkText(p string) error {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%q holds a NUL byte: %w", p, store.ErrInvalidArgument)
	case !utf8.ValidString(p):
		return fmt.Errorf("%q is not valid UTF-8: %w", p, store.ErrInvalidArgument)
	}
	return nil
}

// validateKey is store.ValidateKey with this store's check of key parts.
func validateKey(k store.SessionKey) error {
	return store.ValidateKey(k, checkPart)
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}
