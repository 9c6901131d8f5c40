package boltstore

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

var _ store.Forker = (*Store)(nil)

// ForkSession implements store.Forker: the session record, its events
// and its artifact versions in one transaction.
func (s *Store) ForkSession(ctx context.Context, f *store.Fork) (*agentrunnerv1.Session, error) {
	k := f.Target
	if k.Session == "" {
		k.Session = s.opts.NewID()
	}
	if err := validateKey(k); err != nil {
		return nil, err
	}
	rec, recBytes, events, err := s.forkRecords(k, f)
	if err != nil {
		return nil, err
	}
	arts, err := s.forkArtifactRecords(k, f)
	if err != nil {
		return nil, err
	}
	var out *agentrunnerv1.Session
	err = s.write(ctx, func(tx *bbolt.Tx) error {
		sk := sessionKey(k)
		if tx.Bucket(bucketSessions).Get(sk) != nil {
			return fmt.Errorf("session %s: %w", k, store.ErrAlreadyExists)
		}
		appState, userState, err := applyShared(tx, k, true, nil, nil, s.opts.MaxItemBytes)
		if err != nil {
			return err
		}
		for i, b := range events {
			if err := putEvent(tx.Bucket(bucketEvents), eventKey(sk, uint64(i+1)), b); err != nil {
				return abortError{err}
			}
		}
		for _, a := range arts {
			if err := put(tx.Bucket(bucketArtifacts), a[0], a[1]); err != nil {
				return abortError{err}
			}
			if err := put(tx.Bucket(bucketBlobs), a[0], a[2]); err != nil {
				return abortError{err}
			}
		}
		if err := put(tx.Bucket(bucketSessions), sk, recBytes); err != nil {
			return abortError{err}
		}
		out = store.MergeState(rec, appState, userState)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// forkRecords encodes the fork's session record and events, checked
// against the store's limits before any write.
func (s *Store) forkRecords(k store.SessionKey, f *store.Fork) (*agentrunnerv1.Session, []byte, [][]byte, error) {
	now := timestamppb.New(s.opts.Now())
	rec := &agentrunnerv1.Session{
		AppName: k.App, UserId: k.User, SessionId: k.Session,
		State:      &structpb.Struct{Fields: map[string]*structpb.Value{}},
		CreateTime: now, UpdateTime: now,
		LastSequence:      uint64(len(f.Events)),
		CompactedSequence: f.CompactedSequence(),
		ForkedFrom:        f.ForkedFrom,
	}
	store.ApplyDelta(rec.State, f.State.GetFields())
	recBytes, err := proto.Marshal(rec)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("marshal session: %w", err)
	}
	if err := store.CheckSize("session state", len(recBytes), s.opts.MaxItemBytes); err != nil {
		return nil, nil, nil, err
	}
	events := make([][]byte, len(f.Events))
	for i, ev := range f.Events {
		ev = ev.CloneVT()
		ev.Sequence = uint64(i + 1)
		if events[i], err = proto.Marshal(ev); err != nil {
			return nil, nil, nil, fmt.Errorf("marshal event: %w", err)
		}
	}
	return rec, recBytes, events, nil
}

// forkArtifactRecords returns each copied version's key, metadata and
// content, encoded.
func (s *Store) forkArtifactRecords(k store.SessionKey, f *store.Fork) ([][3][]byte, error) {
	out := make([][3][]byte, 0, len(f.Artifacts))
	for _, a := range f.Artifacts {
		meta, err := proto.Marshal(a.Meta)
		if err != nil {
			return nil, fmt.Errorf("marshal artifact version: %w", err)
		}
		blob, err := proto.Marshal(a.Part)
		if err != nil {
			return nil, fmt.Errorf("marshal artifact: %w", err)
		}
		key := artifactVersionKey(artifactNameKey(k, a.Meta.GetFilename()), a.Meta.GetVersion())
		out = append(out, [3][]byte{key, meta, blob})
	}
	return out, nil
}

// AppendRewind implements store.Forker: the restored artifact versions
// and the rewind event in one transaction, refused while a run of the
// session is active.
func (s *Store) AppendRewind(ctx context.Context, k store.SessionKey, r *store.Rewind) (*agentrunnerv1.Event, error) {
	if err := validateKey(k); err != nil {
		return nil, err
	}
	names := r.RestoreNames()
	versions := make([]*agentrunnerv1.ArtifactVersion, len(names))
	blobs := make([][]byte, len(names))
	for i, name := range names {
		var err error
		if _, versions[i], blobs[i], err = store.NewArtifactVersion(k, name, r.Restore[name], s.opts.Now(), s.opts.MaxItemBytes, checkPart); err != nil {
			return nil, err
		}
	}
	var out *agentrunnerv1.Event
	sk := sessionKey(k)
	err := s.write(ctx, func(tx *bbolt.Tx) error {
		sv := tx.Bucket(bucketSessions).Get(sk)
		if sv == nil {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		}
		if last := lastSequenceOf(sv); last != r.LastSequence {
			return store.MovedError(k, r.LastSequence, last)
		}
		if err := checkNoActiveRun(tx, k); err != nil {
			return err
		}
		ev := r.Event.CloneVT()
		if ev.Actions == nil {
			ev.Actions = &agentrunnerv1.EventActions{}
		}
		ev.Actions.ArtifactDelta = make(map[string]int64, len(names))
		metas := make([][]byte, len(names))
		for i, name := range names {
			ev.Actions.ArtifactDelta[name] = nextArtifactVersion(tx, k, name)
			m := versions[i].CloneVT()
			m.Version = ev.Actions.ArtifactDelta[name]
			var err error
			if metas[i], err = proto.Marshal(m); err != nil {
				return fmt.Errorf("marshal artifact version: %w", err)
			}
		}
		w, err := s.prepareEvent(k, ev, false)
		if err != nil {
			return err
		}
		for i, name := range names {
			vk := artifactVersionKey(artifactNameKey(k, name), ev.Actions.ArtifactDelta[name])
			if err := put(tx.Bucket(bucketArtifacts), vk, metas[i]); err != nil {
				return abortError{err}
			}
			if err := put(tx.Bucket(bucketBlobs), vk, blobs[i]); err != nil {
				return abortError{err}
			}
		}
		w.stored.Sequence, err = appendEventTx(tx, k, sk, sv, w)
		if err != nil {
			return abortError{err}
		}
		out = w.stored
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// nextArtifactVersion is the number the next save of an artifact gets.
func nextArtifactVersion(tx *bbolt.Tx, k store.SessionKey, name string) int64 {
	nameKey := artifactNameKey(k, name)
	if key, _ := tx.Bucket(bucketArtifacts).Cursor().Seek(nameKey); key != nil && bytes.HasPrefix(key, nameKey) {
		return versionFromKey(key) + 1 // the first key is the newest version
	}
	return 1
}

// checkNoActiveRun refuses with store.ErrFailedPrecondition when a run
// of session k is active, by the index of active runs (runindex.go): as
// few entries as the user's runs in flight.
func checkNoActiveRun(tx *bbolt.Tx, k store.SessionKey) error {
	prefix := appendString(appendString([]byte{indexActive}, k.App), k.User)
	c := tx.Bucket(bucketRunRecords).Cursor()
	for key, _ := c.Seek(prefix); key != nil && bytes.HasPrefix(key, prefix); key, _ = c.Next() {
		if len(key) < len(prefix)+8 {
			continue
		}
		runID, _, err := readString(key[len(prefix)+8:])
		if err != nil {
			return fmt.Errorf("run index: %w", err)
		}
		run, err := getRun(tx, runID)
		if err != nil {
			return err
		}
		if run.GetSessionId() == k.Session && store.Active(run.GetStatus()) {
			return store.ActiveRunError(k, runID, run.GetStatus())
		}
	}
	return nil
}
