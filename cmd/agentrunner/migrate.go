package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"github.com/agentrunner/agentrunner/store/pgstore"
)

const migrateUsage = `Usage: agentrunner migrate [flags]

Brings the store --data names to the schema of this binary and exits, for
deployments that migrate before they start (or roll out) servers; serve
applies missing migrations too. On PostgreSQL the migrations run under an
advisory lock, so that concurrent migrators apply each once.

Flags:
`

// migrateCommand applies the store's migrations and reports the schema
// version.
func migrateCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentrunner migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), migrateUsage)
		fs.PrintDefaults()
	}
	var data string
	fs.StringVar(&data, "data", defaultData, dataUsage)
	rest, err := cliflags.Parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if len(rest) > 0 {
		return usagef("migrate takes no arguments, got %q", rest)
	}
	set := false
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == "data" })
	if v := os.Getenv(envData); v != "" && !set {
		data = v
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if !pgstore.IsURL(data) {
		// Opening a bbolt file migrates it.
		st, err := boltstore.Open(data, boltstore.Options{Logger: log})
		if err != nil {
			return fmt.Errorf("open data file: %w", err)
		}
		v, err := st.SchemaVersion()
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: schema version %d\n", data, v)
		return nil
	}
	pool, err := pgstore.Connect(ctx, data)
	if err != nil {
		return err
	}
	defer pool.Close()
	applied, err := pgstore.Migrate(ctx, pool, log)
	if err != nil {
		return err
	}
	var v int
	if err := pool.QueryRow(ctx, "SELECT max(version) FROM schema_migrations").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	fmt.Fprintf(stdout, "%s: applied %d migrations, schema version %d\n", redactData(data), len(applied), v)
	return nil
}
