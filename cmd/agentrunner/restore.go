package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"github.com/agentrunner/agentrunner/store/pgstore"
)

const restoreUsage = `Usage:
  agentrunner restore --from BACKUP --data PATH [--force]

Puts a backup (agentrunner backup) in place as the bbolt store at PATH, for
a server that is stopped. BACKUP is checked first (bbolt's consistency
check, and that it is a store this binary opens); it is then copied to a
temporary file beside PATH, synced, checked again and renamed to PATH. An
existing PATH is replaced only with --force, and never while a running
server holds it. On PostgreSQL use pg_restore (docs/operations.md).

Flags:
`

type restoreFlags struct {
	from, data string
	force      bool
}

// restoreCommand runs `agentrunner restore`.
func restoreCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseRestoreFlags(args, stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := boltstore.CheckFile(ctx, f.from, time.Second); err != nil {
		return fmt.Errorf("restore: %s is not a sound backup: %w", f.from, err)
	}
	if err := checkReplaceable(f.data, f.force, stderr); err != nil {
		return err
	}
	if err := makeDataDir(f.data); err != nil {
		return err
	}
	src, err := os.Open(f.from)
	if err != nil {
		return err
	}
	defer src.Close()
	n, sum, err := writeChecked(ctx, f.data, func(w io.Writer) (int64, string, error) { return hashCopy(w, src) })
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	fmt.Fprintf(stdout, "restore: %d bytes from %s to %s in %s, sha256 %s, bbolt check passed\n",
		n, f.from, f.data, time.Since(start).Round(time.Millisecond), sum)
	return nil
}

func parseRestoreFlags(args []string, stderr io.Writer) (*restoreFlags, error) {
	f := &restoreFlags{}
	fs := flag.NewFlagSet("agentrunner restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, restoreUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.from, "from", "", "the backup `file` (required)")
	fs.StringVar(&f.data, "data", "", "the bbolt `file` to restore into, as serve --data names it (required)")
	fs.BoolVar(&f.force, "force", false, "replace an existing --data file (never one a running server holds)")
	positional, err := cliflags.Parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, err
	case err != nil:
		return nil, usagef("restore: %v", err)
	case len(positional) > 0:
		return nil, usagef("restore takes no arguments, got %q", positional)
	case f.from == "" || f.data == "":
		return nil, usagef("restore: --from and --data are required")
	case pgstore.IsURL(f.data):
		return nil, usagef("restore: --data is a PostgreSQL URL: restore it with pg_restore (docs/operations.md)")
	}
	return f, nil
}

// checkReplaceable refuses a store at path that exists, unless force, and
// one that a running server holds: bbolt's lock (flock) is taken and let
// go at once, so a server starting afterwards is not prevented here (stop
// it first).
func checkReplaceable(path string, force bool, stderr io.Writer) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if !force {
		return fmt.Errorf("restore: %s exists; add --force to replace it", path)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 500 * time.Millisecond})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return fmt.Errorf("restore: %s is held by a running server: stop it first", path)
	}
	if err != nil {
		// A broken file is what a restore replaces: say so and go on.
		fmt.Fprintf(stderr, "restore: replacing %s, which does not open: %v\n", path, err)
		return nil
	}
	return db.Close()
}
