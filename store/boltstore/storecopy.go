package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/storecopy"
)

// The export and import of store/storecopy (agentrunner migrate-store):
// the records as stored, key by key.
var _ storecopy.Target = (*Store)(nil)

// SessionKeys implements storecopy.Source.
func (s *Store) SessionKeys(ctx context.Context, after store.SessionKey, limit int) ([]store.SessionKey, error) {
	var keys []store.SessionKey
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketSessions).Cursor()
		k, _ := c.First()
		if after != (store.SessionKey{}) {
			k, _ = c.Seek(successor(sessionKey(after)))
		}
		for ; k != nil && len(keys) < limit; k, _ = c.Next() {
			sk, err := parseSessionKey(k)
			if err != nil {
				return err
			}
			keys = append(keys, sk)
		}
		return nil
	})
	return keys, err
}

// ExportSession implements storecopy.Source.
func (s *Store) ExportSession(ctx context.Context, k store.SessionKey) (*storecopy.Session, error) {
	if err := validateKey(k); err != nil {
		return nil, err
	}
	out := &storecopy.Session{Key: k}
	sk := sessionKey(k)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		if out.Record, err = getSession(tx, k, sk); err != nil {
			return err
		}
		if err := exportEventsAndRuns(tx, sk, out); err != nil {
			return err
		}
		if err := eachPrefix(tx.Bucket(bucketToolCalls), sk, func(_, v []byte) error {
			c := &agentrunnerv1.ToolCall{}
			out.ToolCalls = append(out.ToolCalls, c)
			return proto.Unmarshal(v, c)
		}); err != nil {
			return err
		}
		out.Artifacts, err = exportArtifacts(tx, artifactPrefix(k.App, k.User, k.Session))
		out.InMemory = tx.Bucket(bucketMemSessions).Get(sk) != nil
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("export session %s: %w", k, err)
	}
	return out, nil
}

// exportEventsAndRuns reads the session's range of the events bucket: its
// events and the keys of its runs, whose records are in run_records.
func exportEventsAndRuns(tx *bbolt.Tx, sk []byte, out *storecopy.Session) error {
	return eachPrefix(tx.Bucket(bucketEvents), sk, func(key, v []byte) error {
		if !isRunKey(key, sk) {
			ev := &agentrunnerv1.Event{}
			out.Events = append(out.Events, ev)
			return proto.Unmarshal(v, ev)
		}
		id, err := runIDOfKey(key, sk)
		if err != nil {
			return err
		}
		_, run, err := loadRun(tx, id)
		if err != nil {
			return err
		}
		anchor := binary.BigEndian.Uint64(key[len(sk) : len(sk)+8])
		out.Runs = append(out.Runs, storecopy.Run{Record: run, Anchor: anchor})
		return nil
	})
}

// exportArtifacts reads every version of every artifact under prefix
// T(app, user, scope).
func exportArtifacts(tx *bbolt.Tx, prefix []byte) ([]storecopy.Artifact, error) {
	var out []storecopy.Artifact
	blobs := tx.Bucket(bucketBlobs)
	err := eachPrefix(tx.Bucket(bucketArtifacts), prefix, func(key, v []byte) error {
		name, _, err := readString(key[len(prefix):])
		if err != nil {
			return err
		}
		a := storecopy.Artifact{Filename: name, Meta: &agentrunnerv1.ArtifactVersion{}, Part: &agentrunnerv1.Part{}}
		if err := proto.Unmarshal(v, a.Meta); err != nil {
			return err
		}
		if err := proto.Unmarshal(blobs.Get(key), a.Part); err != nil {
			return err
		}
		out = append(out, a)
		return nil
	})
	return out, err
}

// eachPrefix calls fn for every key of b that starts with prefix, in order.
func eachPrefix(b *bbolt.Bucket, prefix []byte, fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

// ImportSession implements storecopy.Target: one write transaction.
func (s *Store) ImportSession(ctx context.Context, in *storecopy.Session) error {
	if err := validateKey(in.Key); err != nil {
		return err
	}
	k, sk := in.Key, sessionKey(in.Key)
	runs := make([]*runWrite, len(in.Runs))
	for i, r := range in.Runs {
		w, err := prepareRun(r.Record)
		if err != nil {
			return err
		}
		runs[i] = w
	}
	return s.write(ctx, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketSessions).Get(sk) != nil {
			return fmt.Errorf("session %s: %w", k, store.ErrAlreadyExists)
		}
		// From the first put on, an error must abort the whole batch
		// (abortError): this write is not all-or-nothing by itself.
		if err := importRecords(tx, in, sk); err != nil {
			return abortError{err}
		}
		for i, w := range runs {
			p, err := planRun(tx, w, in.Runs[i].Anchor)
			if err == nil {
				p.callback = false // the source's run called back already
				err = p.apply(tx, 0)
			}
			if err != nil {
				return abortError{err}
			}
		}
		if in.InMemory {
			s.mem.some.Store(true)
			tx.OnCommit(func() { s.mem.markDirty(k) })
			return put(tx.Bucket(bucketMemSessions), sk, binary.AppendUvarint(nil, 0))
		}
		return nil
	})
}

// importRecords puts the session's record, events, tool calls and
// artifacts.
func importRecords(tx *bbolt.Tx, in *storecopy.Session, sk []byte) error {
	if err := putProto(tx.Bucket(bucketSessions), sk, in.Record); err != nil {
		return err
	}
	events := tx.Bucket(bucketEvents)
	for _, ev := range in.Events {
		if err := putProto(events, eventKey(sk, ev.GetSequence()), ev); err != nil {
			return err
		}
	}
	calls := tx.Bucket(bucketToolCalls)
	for _, c := range in.ToolCalls {
		if err := putProto(calls, toolCallKey(sk, c.GetCallId()), c); err != nil {
			return err
		}
	}
	return importArtifacts(tx, artifactPrefix(in.Key.App, in.Key.User, in.Key.Session), in.Artifacts)
}

func importArtifacts(tx *bbolt.Tx, prefix []byte, as []storecopy.Artifact) error {
	metas, blobs := tx.Bucket(bucketArtifacts), tx.Bucket(bucketBlobs)
	for _, a := range as {
		key := artifactVersionKey(appendString(bytes.Clone(prefix), a.Filename), a.Meta.GetVersion())
		if err := putProto(metas, key, a.Meta); err != nil {
			return err
		}
		if err := putProto(blobs, key, a.Part); err != nil {
			return err
		}
	}
	return nil
}

// ExportShared implements storecopy.Source.
func (s *Store) ExportShared(ctx context.Context) (*storecopy.Shared, error) {
	sh := &storecopy.Shared{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bucketAppState).ForEach(func(k, v []byte) error {
			app, _, err := readString(k)
			st := &structpb.Struct{}
			sh.AppState = append(sh.AppState, storecopy.AppState{App: app, State: st})
			return firstErr(err, proto.Unmarshal(v, st))
		}); err != nil {
			return err
		}
		if err := tx.Bucket(bucketUserState).ForEach(func(k, v []byte) error {
			parts, err := readStrings(k, 2)
			st := &structpb.Struct{}
			if err == nil {
				sh.UserState = append(sh.UserState, storecopy.UserState{App: parts[0], User: parts[1], State: st})
			}
			return firstErr(err, proto.Unmarshal(v, st))
		}); err != nil {
			return err
		}
		if err := exportUserArtifacts(tx, sh); err != nil {
			return err
		}
		return tx.Bucket(bucketSpend).ForEach(func(k, v []byte) error {
			parts, err := readStrings(k, 4)
			if err != nil {
				return err
			}
			sp, err := decodeSpend(v)
			sh.Spend = append(sh.Spend, storecopy.SpendRow{App: parts[0], User: parts[1], Day: parts[2], Model: parts[3], Spend: sp})
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("export shared records: %w", err)
	}
	return sh, nil
}

// exportUserArtifacts reads the artifacts of scope "" (the users').
func exportUserArtifacts(tx *bbolt.Tx, sh *storecopy.Shared) error {
	c := tx.Bucket(bucketArtifacts).Cursor()
	for k, _ := c.First(); k != nil; {
		parts, err := readStrings(k, 3)
		if err != nil {
			return err
		}
		prefix := artifactPrefix(parts[0], parts[1], parts[2])
		if parts[2] == "" {
			as, err := exportArtifacts(tx, prefix)
			if err != nil {
				return err
			}
			for _, a := range as {
				sh.UserArtifacts = append(sh.UserArtifacts, storecopy.UserArtifact{App: parts[0], User: parts[1], Artifact: a})
			}
		}
		k, _ = c.Seek(successor(prefix))
	}
	return nil
}

// readStrings decodes the first n strings of a tuple key.
func readStrings(k []byte, n int) ([]string, error) {
	out := make([]string, n)
	for i := range n {
		var err error
		if out[i], k, err = readString(k); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// ImportShared implements storecopy.Target: one write transaction that
// replaces every record sh names.
func (s *Store) ImportShared(ctx context.Context, sh *storecopy.Shared) error {
	return s.write(ctx, func(tx *bbolt.Tx) error {
		err := func() error {
			for _, a := range sh.AppState {
				if err := putProto(tx.Bucket(bucketAppState), appStateKey(a.App), a.State); err != nil {
					return err
				}
			}
			for _, u := range sh.UserState {
				if err := putProto(tx.Bucket(bucketUserState), userStateKey(u.App, u.User), u.State); err != nil {
					return err
				}
			}
			for _, u := range sh.UserArtifacts {
				if err := importArtifacts(tx, artifactPrefix(u.App, u.User, ""), []storecopy.Artifact{u.Artifact}); err != nil {
					return err
				}
			}
			for _, r := range sh.Spend {
				if err := putProto(tx.Bucket(bucketSpend), spendKey(r.App, r.User, r.Day, r.Model), r.Spend); err != nil {
					return err
				}
			}
			return nil
		}()
		if err != nil {
			return abortError{err}
		}
		return nil
	})
}
