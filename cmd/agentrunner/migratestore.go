package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"github.com/agentrunner/agentrunner/store/pgstore"
	"github.com/agentrunner/agentrunner/store/storecopy"
)

const migrateStoreUsage = `Usage:
  agentrunner migrate-store --from STORE --to STORE [--resume] [--checkpoint FILE]

Copies every record of one stopped store into another: sessions with
their events, tool-call ledgers, run records and artifacts (every
version), app and user state, the users' artifacts, the daily spend
ledger and which sessions are in memory (indexed again in the target).
A STORE is bolt:PATH (a bbolt file, created when missing) or a
postgres:// URL (migrated to this binary's schema first). bolt to bolt
compacts a file.

Each session is copied in one transaction; the checkpoint file records
the last one after every page. A target that holds records is refused,
unless --resume: then the copy starts after the checkpoint, and sessions
an interrupted copy wrote already are compared (by checksum), not copied
again. The result is verified at the end: the same sessions, each with
the same checksum, and the same shared records. Spend holds, leases and
the PostgreSQL run queue are not copied; stop the servers first.

Flags:
`

type migrateStoreFlags struct {
	from, to, checkpoint string
	resume, noVerify     bool
}

// migrateStoreCommand runs `agentrunner migrate-store`.
func migrateStoreCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseMigrateStoreFlags(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	src, closeSrc, err := openCopyStore(ctx, f.from, true, log)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	defer closeSrc()
	dst, closeDst, err := openCopyStore(ctx, f.to, false, log)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	defer closeDst()
	start := time.Now()
	rep, err := storecopy.Copy(ctx, src, dst, storecopy.Options{Resume: f.resume, Checkpoint: f.checkpoint,
		Progress: func(r storecopy.Report) {
			fmt.Fprintf(stdout, "progress: %d sessions copied, %d present already, %d events, %s\n",
				r.Copied, r.Present, r.Events, time.Since(start).Round(time.Millisecond))
		}})
	if err != nil {
		return fmt.Errorf("migrate-store: %w (rerun with --resume to go on)", err)
	}
	copied := time.Since(start)
	fmt.Fprintf(stdout, "copied: %d sessions (%d present already), %d events, %d runs, %d artifact versions, %d tool calls, %d shared records, %d schedules in %s\n",
		rep.Copied, rep.Present, rep.Events, rep.Runs, rep.Artifacts, rep.ToolCalls, rep.Shared, rep.Schedules, copied.Round(time.Millisecond))
	if f.noVerify {
		return nil
	}
	v, err := storecopy.Verify(ctx, src, dst, 0)
	if err != nil {
		return fmt.Errorf("migrate-store: verify: %w", err)
	}
	fmt.Fprintf(stdout, "verified: %d sessions equal by checksum (%d events, %d runs, %d artifact versions, %d tool calls), shared records %s, in %s\n",
		v.Sessions, v.Events, v.Runs, v.Artifacts, v.ToolCalls, v.SharedChecksum[:16], (time.Since(start) - copied).Round(time.Millisecond))
	return nil
}

func parseMigrateStoreFlags(args []string, stderr io.Writer) (*migrateStoreFlags, error) {
	f := &migrateStoreFlags{}
	fs := flag.NewFlagSet("agentrunner migrate-store", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, migrateStoreUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.from, "from", "", "the source `store`: bolt:PATH or postgres://... (required)")
	fs.StringVar(&f.to, "to", "", "the target `store`: bolt:PATH or postgres://... (required)")
	fs.BoolVar(&f.resume, "resume", false, "write into a target that holds records: go on with an interrupted copy")
	fs.StringVar(&f.checkpoint, "checkpoint", "", "checkpoint `file`; default: PATH.migrate-checkpoint for a bolt:PATH target, else agentrunner-migrate.checkpoint in the working directory")
	fs.BoolVar(&f.noVerify, "no-verify", false, "skip the comparison of every session at the end")
	positional, err := cliflags.Parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, err
	case err != nil:
		return nil, usagef("migrate-store: %v", err)
	case len(positional) > 0:
		return nil, usagef("migrate-store takes no arguments, got %q", positional)
	case f.from == "" || f.to == "":
		return nil, usagef("migrate-store: --from and --to are required")
	case f.from == f.to:
		return nil, usagef("migrate-store: --from and --to are the same store")
	}
	for _, s := range []string{f.from, f.to} {
		if !pgstore.IsURL(s) && !strings.HasPrefix(s, "bolt:") {
			return nil, usagef("migrate-store: %q is neither bolt:PATH nor a postgres:// URL", redactData(s))
		}
	}
	if f.checkpoint == "" {
		f.checkpoint = "agentrunner-migrate.checkpoint"
		if p, ok := strings.CutPrefix(f.to, "bolt:"); ok {
			f.checkpoint = p + ".migrate-checkpoint"
		}
	}
	return f, nil
}

// copyStore is what migrate-store reads and writes: either store.
type copyStore interface {
	storecopy.Target
	Close() error
}

// openCopyStore opens bolt:PATH or a PostgreSQL URL, applying migrations.
// A source file must exist: bbolt would create a mistyped path, and the
// copy of that empty store would succeed.
func openCopyStore(ctx context.Context, spec string, source bool, log *slog.Logger) (storecopy.Target, func(), error) {
	var st copyStore
	var err error
	if path, ok := strings.CutPrefix(spec, "bolt:"); ok {
		if source {
			if _, err := os.Stat(path); err != nil {
				return nil, nil, err
			}
		}
		if err := makeDataDir(path); err != nil {
			return nil, nil, err
		}
		st, err = boltstore.Open(path, boltstore.Options{Logger: log})
	} else {
		st, err = pgstore.Open(ctx, spec, pgstore.Options{Logger: log})
	}
	if err != nil {
		return nil, nil, err
	}
	return st, func() {
		if err := st.Close(); err != nil {
			log.Error("close store", "store", redactData(spec), "err", err)
		}
	}, nil
}
