// Command adkgo is the peer of `agentrunner bench --peer`: adk-go v1.6.0's
// REST API (server/adkrest, what `adk web api` serves) with one app whose
// root agent is an adk-go llmagent on a zero-latency model that answers
// as agentrunner's offline model does (model.go). Sessions are kept by
// adk-go's in-memory service, or by its database service on SQLite
// (gorm with github.com/glebarez/sqlite, pure Go: no cgo) or on
// PostgreSQL (gorm.io/driver/postgres, on pgx).
//
// It is a module of its own so that agentrunner never depends on adk-go.
//
//	go build -C examples/peer/adkgo -o "$PWD/.tmp/adkpeer" .  # -o is relative to -C
//	.tmp/adkpeer --addr 127.0.0.1:0 --sessions sqlite --dir /tmp/x
//
// When it serves, it prints "listening on http://HOST:PORT" on stdout; the
// API is under /api, as the adk web launcher and adk-go's REST example
// mount it. SIGTERM or SIGINT stops it gracefully.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/glebarez/sqlite"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx" driver, under gorm's postgres dialect
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/server/adkrest"
	"google.golang.org/adk/session"
	"google.golang.org/adk/session/database"
)

// sqliteDSN makes SQLite wait for its write lock instead of failing with
// SQLITE_BUSY when concurrent runs append events: busy_timeout waits, and
// _txlock=immediate takes the lock when a transaction begins, since two
// deferred transactions that read and then both write get SQLITE_BUSY at
// once, whatever the timeout (adk-go's database service reads before it
// writes). WAL lets readers proceed beside the writer, and synchronous
// FULL keeps every commit durable (the WAL is fsynced at each commit, as
// agentrunner's bbolt store fsyncs each of its commits). These are the
// settings an operator would pick to serve concurrent sessions from one
// file; without _txlock=immediate, creating 8 sessions at once already
// fails. Even so, SQLite's busy handler can let a waiter starve past the
// timeout under a few hundred concurrent sessions: see --sqlite-conns.
const sqliteDSN = "file:%s?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to serve on (port 0 picks a free one)")
	store := flag.String("sessions", "memory", "session service: memory (adk-go's in-memory service), sqlite (its database service on a SQLite file) or postgres (its database service on the --dsn database)")
	dsn := flag.String("dsn", "", "PostgreSQL URL of the postgres session service (with --sessions postgres)")
	dir := flag.String("dir", "", "directory of the SQLite file (with --sessions sqlite; default: the current directory)")
	conns := flag.Int("sqlite-conns", 1, "most open SQLite connections (0: no limit); one serializes the service's transactions in Go's pool, in the order they ask, where SQLite's busy handler lets a waiter starve past any busy_timeout under a few hundred concurrent sessions")
	app := flag.String("app", "bench", "app name; it is the root agent's name too, since adk-go's single agent loader serves the root agent under its name")
	var pc pace
	flag.DurationVar(&pc.first, "first-chunk-delay", 0, "the model's time to its first response, as the offline model's first_chunk_delay")
	flag.DurationVar(&pc.gap, "chunk-delay", 0, "the model's time between later responses, as the offline model's chunk_delay")
	flag.IntVar(&pc.chunks, "chunks", 0, "pieces a streamed answer is cut into, as the offline model's chunks (0: word by word)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *addr, storeConfig{*store, *dir, *dsn, *conns}, *app, pc); err != nil {
		slog.Error("adkgo peer", "err", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then shuts the server down.
func run(ctx context.Context, addr string, sc storeConfig, app string, pc pace) error {
	sessions, err := sessionService(sc)
	if err != nil {
		return err
	}
	root, err := llmagent.New(llmagent.Config{
		Name:        app,
		Description: "Answers with a zero-latency echo model, as agentrunner's offline model answers.",
		Model:       echoModel{name: "offline", pace: pc},
	})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	rest, err := adkrest.NewServer(adkrest.ServerConfig{
		AgentLoader:    agent.NewSingleLoader(root),
		SessionService: sessions,
		// adk web's default: a zero timeout would set the write deadline
		// of every SSE response to the moment it starts.
		SSEWriteTimeout: 120 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("rest server: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", rest))
	// pprof, as agentrunner's --debug-addr serves it: the bench's
	// runs-in-flight scenario counts goroutines there. Loopback only.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	// The harness waits for this line; nothing else goes to stdout.
	fmt.Printf("listening on http://%s\n", l.Addr())
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// storeConfig says which session service to serve from.
type storeConfig struct {
	kind  string // memory, sqlite or postgres
	dir   string // sqlite: the file's directory
	dsn   string // postgres: the database's URL
	conns int    // sqlite: most open connections
}

// pgConns is the postgres service's pool: agentrunner's pgstore default
// (pgstore.DefaultMaxConns), so that both sides of a side-by-side on one
// PostgreSQL hold as many connections; database/sql's default, no bound,
// would open one per concurrent session, past max_connections.
const pgConns = 24

// sessionService builds the session service sc names.
func sessionService(sc storeConfig) (session.Service, error) {
	// gorm's default logger writes slow-query warnings to stdout, which is
	// the harness's; errors reach it as failed requests.
	quiet := &gorm.Config{Logger: gormlogger.Default.LogMode(gormlogger.Silent)}
	switch sc.kind {
	case "memory":
		return session.InMemoryService(), nil
	case "sqlite":
		path := filepath.Join(sc.dir, "sessions.db")
		db, err := sql.Open(sqlite.DriverName, fmt.Sprintf(sqliteDSN, path))
		if err != nil {
			return nil, fmt.Errorf("sqlite %s: %w", path, err)
		}
		db.SetMaxOpenConns(sc.conns)
		return migrated(database.NewSessionService(sqlite.Dialector{Conn: db}, quiet))
	case "postgres":
		if sc.dsn == "" {
			return nil, errors.New("--sessions postgres needs --dsn")
		}
		dsn, err := inSchema(sc.dsn, pgSchema)
		if err != nil {
			return nil, err
		}
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		if _, err := db.Exec("CREATE SCHEMA IF NOT EXISTS " + pgSchema); err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		db.SetMaxOpenConns(pgConns)
		db.SetMaxIdleConns(pgConns)
		return migrated(database.NewSessionService(postgres.New(postgres.Config{Conn: db}), quiet))
	}
	return nil, fmt.Errorf("--sessions %q: want memory, sqlite or postgres", sc.kind)
}

// pgSchema holds the postgres service's tables: adk-go's "sessions" and
// "events" would collide with agentrunner's in the public schema of a
// database both use.
const pgSchema = "adkgo_peer"

// inSchema returns the postgres:// URL dsn with its search_path set to
// schema.
func inSchema(dsn, schema string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("--dsn: want a postgres:// URL")
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// migrated creates the database service's tables it lacks.
func migrated(svc session.Service, err error) (session.Service, error) {
	if err != nil {
		return nil, fmt.Errorf("database sessions: %w", err)
	}
	if err := database.AutoMigrate(svc); err != nil {
		return nil, fmt.Errorf("database sessions: migrate: %w", err)
	}
	return svc, nil
}
