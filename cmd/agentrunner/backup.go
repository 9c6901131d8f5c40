package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/clientconn"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"github.com/agentrunner/agentrunner/store/pgstore"
)

const backupUsage = `Usage:
  agentrunner backup --out FILE [--addr HOST:PORT] [auth and TLS flags]
  agentrunner backup --out FILE --data PATH

Writes a consistent copy of a bbolt store to FILE. With --addr (the
default), the running server streams it (AdminService.Backup, admins only)
from one read transaction, without stopping its writes: the copy holds
every write acknowledged before the backup began. With --data, the bbolt
file of a stopped server is copied directly (a file a server holds is
refused: back it up through the server). Either way the copy is written to
a temporary file beside FILE, synced, checked with bbolt's consistency
check, then renamed to FILE, so FILE is either the old file or a whole,
checked copy. On PostgreSQL use pg_dump (docs/operations.md).

Flags:
`

type backupFlags struct {
	addr, out, data string
	conn            clientconn.Flags
}

// backupCommand runs `agentrunner backup`.
func backupCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseBackupFlags(args, stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	var fill func(w io.Writer) (int64, string, error)
	if f.data != "" {
		fill = func(w io.Writer) (int64, string, error) { return copyStoppedStore(f.data, w) }
	} else {
		fill = func(w io.Writer) (int64, string, error) { return streamBackup(ctx, f, w) }
	}
	n, sum, err := writeChecked(ctx, f.out, fill)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backup: %d bytes to %s in %s, sha256 %s, bbolt check passed\n",
		n, f.out, time.Since(start).Round(time.Millisecond), sum)
	return nil
}

func parseBackupFlags(args []string, stderr io.Writer) (*backupFlags, error) {
	f := &backupFlags{}
	fs := flag.NewFlagSet("agentrunner backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, backupUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.addr, "addr", clientAddr(), "address of the running server to back up (env "+envAddr+")")
	f.conn.Register(fs)
	fs.StringVar(&f.out, "out", "", "the backup `file` to write (required); replaced only by a whole, checked copy")
	fs.StringVar(&f.data, "data", "", "bbolt `file` of a stopped server to copy directly, instead of asking --addr")
	positional, err := cliflags.Parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, err
	case err != nil:
		return nil, usagef("backup: %v", err)
	case len(positional) > 0:
		return nil, usagef("backup takes no arguments, got %q", positional)
	case f.out == "":
		return nil, usagef("backup: --out is required")
	case pgstore.IsURL(f.data):
		return nil, usagef("backup: --data is a PostgreSQL URL: back it up with pg_dump (docs/operations.md)")
	}
	return f, nil
}

// streamBackup asks the server for the copy and writes it to w, checking
// its size and SHA-256 against the stream's last message.
func streamBackup(ctx context.Context, f *backupFlags, w io.Writer) (int64, string, error) {
	conn, err := f.conn.Dial(f.addr)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := servicev1.NewAdminServiceClient(conn).Backup(ctx, &servicev1.BackupRequest{})
	if err != nil {
		return 0, "", describeRPC(err)
	}
	sum := sha256.New()
	var n int64
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return n, "", errors.New("backup: the stream ended without its size and checksum: the copy is incomplete")
		}
		if err != nil {
			return n, "", describeRPC(err)
		}
		if msg.GetSha256() != "" {
			got := hex.EncodeToString(sum.Sum(nil))
			if msg.GetSize() != n || msg.GetSha256() != got {
				return n, "", fmt.Errorf("backup: received %d bytes with sha256 %s, the server sent %d bytes with sha256 %s", n, got, msg.GetSize(), msg.GetSha256())
			}
			return n, got, nil
		}
		if _, err := w.Write(msg.GetChunk()); err != nil {
			return n, "", err
		}
		sum.Write(msg.GetChunk())
		n += int64(len(msg.GetChunk()))
	}
}

// copyStoppedStore copies the bbolt file at path, which no server may
// hold, from a read transaction.
func copyStoppedStore(path string, w io.Writer) (int64, string, error) {
	if _, err := os.Stat(path); err != nil {
		return 0, "", err
	}
	db, err := bbolt.Open(path, 0o400, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return 0, "", fmt.Errorf("open %s (held by a running server? then back up with --addr): %w", path, err)
	}
	defer db.Close()
	sum := sha256.New()
	var n int64
	err = db.View(func(tx *bbolt.Tx) error {
		n, err = tx.WriteTo(io.MultiWriter(w, sum))
		return err
	})
	return n, hex.EncodeToString(sum.Sum(nil)), err
}

// writeChecked writes a file at path through fill: into a temporary file
// beside it, synced and checked (boltstore.CheckFile) before it is renamed
// to path and the directory synced. A failure leaves path as it was.
func writeChecked(ctx context.Context, path string, fill func(io.Writer) (int64, string, error)) (n int64, sum string, err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return 0, "", err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if n, sum, err = fill(tmp); err != nil {
		return n, sum, err
	}
	if err = tmp.Sync(); err != nil {
		return n, sum, err
	}
	if err = tmp.Close(); err != nil {
		return n, sum, err
	}
	if err = boltstore.CheckFile(ctx, tmp.Name(), time.Second); err != nil {
		return n, sum, fmt.Errorf("the copy is not sound, %s left as it was: %w", path, err)
	}
	if err = os.Chmod(tmp.Name(), 0o600); err != nil {
		return n, sum, err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return n, sum, err
	}
	return n, sum, syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// hashCopy copies r to w and returns the size and SHA-256 of what it
// copied.
func hashCopy(w io.Writer, r io.Reader) (int64, string, error) {
	var sum hash.Hash = sha256.New()
	n, err := io.Copy(io.MultiWriter(w, sum), r)
	return n, hex.EncodeToString(sum.Sum(nil)), err
}
