package storecopy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentrunner/agentrunner/store"
)

// Options configure Copy.
type Options struct {
	// Resume lets the copy write into a target that holds records: a
	// session there already is checked against the source, not copied.
	// Without it a target with any record is refused (ErrTargetNotEmpty).
	Resume bool
	// Checkpoint, when set, is a file where the copy records the last
	// session it copied, after each page: a resumed copy starts after it.
	// The file is replaced atomically; it is left when the copy ends.
	Checkpoint string
	// PageSize is how many session keys are read at a time; zero means 500.
	PageSize int
	// Progress, when set, is told of the counts after each page.
	Progress func(Report)
}

// Report counts what a copy did.
type Report struct {
	// Copied sessions were written by this copy; Present ones were in the
	// target already (an earlier, interrupted copy) and found equal.
	Copied, Present int
	// Events, Runs, Artifacts, ToolCalls count the records of the copied
	// sessions.
	Events, Runs, Artifacts, ToolCalls int
	// Shared counts the shared records written (state, user artifacts,
	// spend rows).
	Shared int
	// Schedules counts the API schedules written, with their cursors.
	Schedules int
}

// checkpoint is the checkpoint file's content.
type checkpoint struct {
	After   store.SessionKey `json:"after"`
	Copied  int              `json:"copied"`
	Present int              `json:"present"`
	Time    time.Time        `json:"time"`
}

// Copy copies every record of src into dst: the sessions in key order,
// then the shared records. It does not verify the result: Verify does.
func Copy(ctx context.Context, src Source, dst Target, opts Options) (Report, error) {
	var rep Report
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	if !opts.Resume {
		if err := checkEmpty(ctx, dst); err != nil {
			return rep, err
		}
		// A checkpoint left by an earlier copy (one that ended, or went
		// to another target) is not this copy's: were this one killed
		// before its first page, a resume would skip what it names.
		if err := removeCheckpoint(opts.Checkpoint); err != nil {
			return rep, err
		}
	}
	var after store.SessionKey
	if opts.Resume && opts.Checkpoint != "" {
		cp, err := readCheckpoint(opts.Checkpoint)
		if err != nil {
			return rep, err
		}
		after = cp.After
	}
	for {
		keys, err := src.SessionKeys(ctx, after, opts.PageSize)
		if err != nil {
			return rep, fmt.Errorf("list source sessions: %w", err)
		}
		for _, k := range keys {
			if err := copySession(ctx, src, dst, k, &rep); err != nil {
				return rep, err
			}
		}
		if len(keys) == 0 {
			break
		}
		after = keys[len(keys)-1]
		if opts.Checkpoint != "" {
			if err := writeCheckpoint(opts.Checkpoint, checkpoint{After: after, Copied: rep.Copied, Present: rep.Present, Time: time.Now().UTC()}); err != nil {
				return rep, err
			}
		}
		if opts.Progress != nil {
			opts.Progress(rep)
		}
	}
	sh, err := src.ExportShared(ctx)
	if err != nil {
		return rep, fmt.Errorf("export shared records: %w", err)
	}
	if err := dst.ImportShared(ctx, sh); err != nil {
		return rep, fmt.Errorf("import shared records: %w", err)
	}
	rep.Shared = len(sh.AppState) + len(sh.UserState) + len(sh.UserArtifacts) + len(sh.Spend)
	rep.Schedules, err = copySchedules(ctx, src, dst)
	return rep, err
}

// copySession copies one session, or checks the copy an interrupted run
// made of it.
func copySession(ctx context.Context, src Source, dst Target, k store.SessionKey, rep *Report) error {
	s, err := src.ExportSession(ctx, k)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted since it was listed
	}
	if err != nil {
		return fmt.Errorf("export session %s: %w", k, err)
	}
	err = dst.ImportSession(ctx, s)
	switch {
	case errors.Is(err, store.ErrAlreadyExists):
		if err := sameSession(ctx, s, dst); err != nil {
			return err
		}
		rep.Present++
		return nil
	case err != nil:
		return fmt.Errorf("import session %s: %w", k, err)
	}
	rep.Copied++
	rep.Events += len(s.Events)
	rep.Runs += len(s.Runs)
	rep.Artifacts += len(s.Artifacts)
	rep.ToolCalls += len(s.ToolCalls)
	return nil
}

// sameSession checks that dst holds s as it is.
func sameSession(ctx context.Context, s *Session, dst Source) error {
	t, err := dst.ExportSession(ctx, s.Key)
	if err != nil {
		return fmt.Errorf("export target session %s: %w", s.Key, err)
	}
	want, err := Checksum(s)
	if err != nil {
		return err
	}
	got, err := Checksum(t)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("session %s is in the target already, with other content (checksum %s, the source's %s)", s.Key, got, want)
	}
	return nil
}

// checkEmpty refuses a target that holds a session or a shared record.
func checkEmpty(ctx context.Context, dst Target) error {
	keys, err := dst.SessionKeys(ctx, store.SessionKey{}, 1)
	if err != nil {
		return fmt.Errorf("list target sessions: %w", err)
	}
	if len(keys) > 0 {
		return fmt.Errorf("%w: it holds session %s (resume an interrupted copy to write into it)", ErrTargetNotEmpty, keys[0])
	}
	sh, err := dst.ExportShared(ctx)
	if err != nil {
		return fmt.Errorf("export target shared records: %w", err)
	}
	if !sh.Empty() {
		return fmt.Errorf("%w: it holds app or user state, user artifacts or spend", ErrTargetNotEmpty)
	}
	return nil
}

func removeCheckpoint(path string) error {
	if path == "" {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the stale checkpoint: %w", err)
	}
	return nil
}

func readCheckpoint(path string) (checkpoint, error) {
	var cp checkpoint
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cp, nil
	}
	if err != nil {
		return cp, err
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		return cp, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return cp, nil
}

// writeCheckpoint replaces the checkpoint file atomically. It is not
// synced: a checkpoint lost to a crash only makes a resumed copy check
// more sessions, which the target holds whole or not at all.
func writeCheckpoint(path string, cp checkpoint) error {
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
