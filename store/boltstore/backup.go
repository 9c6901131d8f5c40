package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the store's file to w while the store
// keeps serving, and returns its size. The copy is the file as one read
// transaction sees it: every write acknowledged before Backup was called
// is in it, none that commits after the transaction began. Writes go on
// meanwhile, with one cost: pages they free cannot be reused until the
// copy is done, so a slow reader of w makes the live file grow (and a
// commit that must enlarge the memory map waits for the copy to end). Run
// records queued by PutRunLater and not committed yet are not in the copy,
// as a crash would lose them too. A ctx cancelled mid-copy stops it at the
// next write to w.
func (s *Store) Backup(ctx context.Context, w io.Writer) (int64, error) {
	var n int64
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		n, err = tx.WriteTo(ctxWriter{ctx: ctx, w: w})
		return err
	})
	if err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	return n, nil
}

// ctxWriter stops a copy once its context is done: WriteTo has no context
// of its own.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// CheckFile opens the bbolt file at path read-only, runs bbolt's
// consistency check over every page (what `bbolt check` does) and checks
// that it is a store of a schema this binary can open: every bucket
// present, the schema version at most currentSchema. It returns every
// error the check found, joined. The file must not be held by a writer
// (a running server): opening it read-only waits for its lock, up to
// timeout.
func CheckFile(ctx context.Context, path string, timeout time.Duration) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	db, err := bbolt.Open(path, 0o400, &bbolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			// The checker's goroutine ends only once the channel is
			// drained, so it is read to the end whatever is kept.
			if len(errs) < 100 {
				errs = append(errs, err)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s fails bbolt's check: %w", path, errors.Join(errs...))
		}
		return checkLayout(tx)
	})
}

// checkLayout reports a file that is sound bbolt but not a store this
// binary opens: a bucket missing or a schema newer than currentSchema.
func checkLayout(tx *bbolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return errors.New("not an agentrunner store: no meta bucket")
	}
	v, n := binary.Uvarint(meta.Get(keySchemaVersion))
	if n <= 0 {
		return errors.New("not an agentrunner store: schema version missing or corrupt")
	}
	if v > currentSchema {
		return fmt.Errorf("schema version %d is newer than this binary's %d", v, currentSchema)
	}
	for _, name := range allBuckets {
		if tx.Bucket(name) == nil && v == currentSchema {
			return fmt.Errorf("not an agentrunner store of schema %d: bucket %s is missing", v, name)
		}
	}
	return nil
}
