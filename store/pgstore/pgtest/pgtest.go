// Package pgtest starts private PostgreSQL clusters for tests: Debian's
// server binaries (initdb, pg_ctl, postgres), run as an unprivileged user
// in a temporary directory, listening on 127.0.0.1 on a free port, with
// the unix socket in that directory. One cluster serves a whole test
// binary (Main, from TestMain) and every test gets a database of its own
// (Shared.URL).
//
// When no server can be started, tests skip with the reason, unless the
// environment sets AGENTRUNNER_REQUIRE_POSTGRES=1 (CI does): then they
// fail.
//
// Like every package under store/, it must not import runner, server,
// cmd or examples.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvRequire, set to 1, turns a cluster that cannot start from a skip
// into a failure.
const EnvRequire = "AGENTRUNNER_REQUIRE_POSTGRES"

// Options configure Start.
type Options struct {
	// Fsync keeps fsync on: for benchmarks that measure durable commits.
	// Tests leave it off; they check what is stored, not the disk.
	Fsync bool
}

// Cluster is a running private PostgreSQL server.
type Cluster struct {
	dir    string   // the temporary directory: data, socket and log
	bin    string   // the directory of pg_ctl
	asUser []string // the command prefix that runs as the unprivileged user, if any
	port   int
	// watchdog stops the server should this process die without Stop.
	watchdog *exec.Cmd
}

// Start initializes and starts a cluster in a new temporary directory.
// The caller must Stop it.
func Start(opts Options) (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agentrunner-pg-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	c := &Cluster{dir: dir, bin: bin}
	if err := c.init(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// A free port may be taken between the probe and the server's bind:
	// try a few.
	for attempt := 0; ; attempt++ {
		if err = c.start(opts); err == nil || attempt == 2 {
			break
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.watch(); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

// watch starts a shell that waits for this process to end and then stops
// the server and removes its directory: a test binary killed by a
// timeout, or ended by a panic, never reaches Stop, and a server left
// running would hold its port and memory on a shared machine. It runs in
// a session of its own, out of reach of signals to the test's process
// group. Stop ends it first.
func (c *Cluster) watch() error {
	const script = `pid=$1 dir=$2; shift 2
while kill -0 "$pid" 2>/dev/null; do sleep 1; done
"$@" >/dev/null 2>&1
rm -rf "$dir"`
	stop := append(slices.Clone(c.asUser), filepath.Join(c.bin, "pg_ctl"), "-D", c.data(), "-m", "immediate", "stop")
	args := append([]string{"-c", script, "pgtest-watchdog", strconv.Itoa(os.Getpid()), c.dir}, stop...)
	c.watchdog = exec.Command("/bin/sh", args...)
	c.watchdog.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.watchdog.Start(); err != nil {
		c.watchdog = nil
		return fmt.Errorf("start the cluster's watchdog: %w", err)
	}
	return nil
}

// findBin returns the directory of Debian's server binaries: that of
// initdb on PATH, else the newest /usr/lib/postgresql/*/bin.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries: initdb is not on PATH nor in /usr/lib/postgresql/*/bin (apt-get install postgresql-15)")
}

// init runs initdb. PostgreSQL refuses to run as root, so as root the
// cluster belongs to, and runs as, user nobody.
func (c *Cluster) init() error {
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return fmt.Errorf("running as root and no user nobody to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(c.dir, uid, gid); err != nil {
			return fmt.Errorf("chown %s: %w", c.dir, err)
		}
		runuser, err := exec.LookPath("runuser")
		if err != nil {
			return fmt.Errorf("running as root and no runuser to run PostgreSQL as nobody: %w", err)
		}
		c.asUser = []string{runuser, "-u", "nobody", "--"}
	}
	return c.run(60*time.Second, filepath.Join(c.bin, "initdb"), "-D", c.data(), "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// run runs a server binary as the cluster's user and returns its output
// in the error when it fails.
func (c *Cluster) run(timeout time.Duration, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := append(append(slices.Clone(c.asUser), name), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", filepath.Base(name), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// start starts the server on a free loopback port and waits until it
// accepts connections.
func (c *Cluster) start(opts Options) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	fsync := "off"
	if opts.Fsync {
		fsync = "on"
	}
	settings := strings.Join([]string{
		"-c listen_addresses=127.0.0.1",
		"-c port=" + strconv.Itoa(port),
		"-c unix_socket_directories=" + c.dir,
		"-c fsync=" + fsync,
		"-c shared_buffers=32MB",
		"-c max_connections=200",
	}, " ")
	logFile := filepath.Join(c.dir, "postgres.log")
	err = c.run(60*time.Second, filepath.Join(c.bin, "pg_ctl"), "-D", c.data(), "-o", settings, "-l", logFile, "-w", "-t", "50", "start")
	if err != nil {
		log, _ := os.ReadFile(logFile)
		return fmt.Errorf("start PostgreSQL: %w\n%s", err, lastLines(log, 20))
	}
	c.port = port
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Stop stops the server at once (pg_ctl stop -m immediate: nothing it
// holds needs keeping) and removes its directory.
func (c *Cluster) Stop() error {
	if c.watchdog != nil {
		_ = c.watchdog.Process.Kill()
		_ = c.watchdog.Wait() // killed: its status says so
		c.watchdog = nil
	}
	err := c.run(60*time.Second, filepath.Join(c.bin, "pg_ctl"), "-D", c.data(), "-m", "immediate", "-w", "stop")
	return errors.Join(err, os.RemoveAll(c.dir))
}

// URL returns the URL of database db on the cluster.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// CreateDatabase creates database name (a plain identifier).
func (c *Cluster) CreateDatabase(ctx context.Context, name string) error {
	return c.admin(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
}

// DropDatabase drops database name, closing its connections first.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	return c.admin(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

func (c *Cluster) admin(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("connect to the test cluster: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// Shared is the cluster of one test binary: started by the first test
// that asks for a database, stopped by Main once every test is done.
type Shared struct {
	once    sync.Once
	cluster *Cluster
	err     error
	dbs     atomic.Int64
}

// Main runs the tests of m and then stops the cluster if one was
// started; TestMain passes its result to os.Exit.
func Main(m *testing.M, sh *Shared) int {
	code := m.Run()
	if sh.cluster != nil {
		if err := sh.cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop the test cluster: %v\n", err)
		}
	}
	return code
}

// Cluster returns the shared cluster, starting it on first use. A
// cluster that cannot start skips the test, or fails it when
// AGENTRUNNER_REQUIRE_POSTGRES=1.
func (sh *Shared) Cluster(t testing.TB) *Cluster {
	t.Helper()
	sh.once.Do(func() { sh.cluster, sh.err = Start(Options{}) })
	if sh.err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("PostgreSQL is required (%s=1) but no test server could be started: %v", EnvRequire, sh.err)
		}
		t.Skipf("no PostgreSQL test server could be started (install postgresql-15, or set %s=1 to make this a failure): %v", EnvRequire, sh.err)
	}
	return sh.cluster
}

// URL returns the URL of a new, empty database on the shared cluster,
// dropped when the test ends.
func (sh *Shared) URL(t testing.TB) string {
	t.Helper()
	c := sh.Cluster(t)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), sh.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.DropDatabase(ctx, name); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	return c.URL(name)
}
