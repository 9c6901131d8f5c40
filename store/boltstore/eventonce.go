package boltstore

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// eventIDField is the field number of Event.id.
const eventIDField = 1

// AppendEventOnce implements store.Store: the client's append, stored
// as given, whose usage counts toward nothing. The session's events are
// searched in a read transaction first, so that the search of a long
// session does not hold the committer (every writer waits on it); the
// committer then searches only the events appended since.
func (s *Store) AppendEventOnce(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, bool, error) {
	if ev.GetId() == "" {
		stored, err := s.appendEvent(ctx, k, ev, false)
		return stored, false, err
	}
	w, err := s.prepareEvent(k, ev, false)
	if err != nil {
		return nil, false, err
	}
	sk := sessionKey(k)
	var (
		seen  uint64 // the session's last sequence when it was searched
		found []byte // the stored encoding of the event holding the id
	)
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		sv := tx.Bucket(bucketSessions).Get(sk)
		if sv == nil {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		}
		seen = lastSequenceOf(sv)
		found = bytes.Clone(findEventID(tx.Bucket(bucketEvents).Cursor(), sk, 0, ev.GetId()))
		return nil
	})
	if err != nil || found != nil {
		return duplicate(found, ev, w, err)
	}
	err = s.write(ctx, func(tx *bbolt.Tx) error {
		sv := tx.Bucket(bucketSessions).Get(sk)
		if sv == nil {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		}
		if v := findEventID(tx.Bucket(bucketEvents).Cursor(), sk, seen, ev.GetId()); v != nil {
			found = bytes.Clone(v)
			return nil
		}
		var err error
		w.stored.Sequence, err = appendEventTx(tx, k, sk, sv, w)
		return err
	})
	if err != nil || found != nil {
		return duplicate(found, ev, w, err)
	}
	return w.stored, false, nil
}

// duplicate answers an append whose id the session holds already, in
// the stored encoding found (store.RepeatedAppend). A non-nil err is returned as it is.
func duplicate(found []byte, ev *agentrunnerv1.Event, w eventWrite, err error) (*agentrunnerv1.Event, bool, error) {
	if err != nil {
		return nil, false, err
	}
	held, err := store.DecodeEvent(found)
	if err != nil {
		return nil, false, err
	}
	return store.RepeatedAppend(held, w.stored, ev)
}

// findEventID returns the stored encoding of session sk's event with id
// among those after sequence after, or nil. It reads each event's id
// from its encoding without decoding the rest.
func findEventID(c *bbolt.Cursor, sk []byte, after uint64, id string) []byte {
	for key, v := c.Seek(eventKey(sk, after+1)); key != nil && bytes.HasPrefix(key, sk); key, v = c.Next() {
		if !isRunKey(key, sk) && eventIDIs(v, id) {
			return v
		}
	}
	return nil
}

// eventIDIs reports whether the encoded event v has id (the last
// occurrence of the field counts, as in protobuf).
func eventIDIs(v []byte, id string) bool {
	var got []byte
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			break
		}
		v = v[n:]
		if num == eventIDField && typ == protowire.BytesType {
			b, m := protowire.ConsumeBytes(v)
			if m < 0 {
				break
			}
			got, v = b, v[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, v)
		if m < 0 {
			break
		}
		v = v[m:]
	}
	return string(got) == id
}
