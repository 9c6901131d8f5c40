package boltstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
)

// The tool-call ledger: bucket tool_calls, T(app, user, session, call id)
// -> ToolCall. AppendEvent keeps it in the transaction that stores the
// event: a function call opens an entry, its answer closes it. No extra
// write transaction, no extra fsync.

func toolCallKey(sk []byte, callID string) []byte {
	return appendString(bytes.Clone(sk), callID)
}

// recordToolCalls updates the ledger of session sk with the function calls
// and responses of ev, stored at its sequence.
func recordToolCalls(tx *bbolt.Tx, sk []byte, seq uint64, ev *agentrunnerv1.Event) error {
	// Most events carry no function part: they cost not even a bucket
	// lookup in the committer, which every session's writes go through.
	if !slices.ContainsFunc(ev.GetContent().GetParts(), isFunctionPart) {
		return nil
	}
	calls := tx.Bucket(bucketToolCalls)
	for _, p := range ev.GetContent().GetParts() {
		if fc := p.GetFunctionCall(); fc.GetId() != "" {
			if err := openCall(calls, sk, seq, ev, fc); err != nil {
				return err
			}
		}
		if fr := p.GetFunctionResponse(); fr.GetId() != "" {
			if err := closeCall(calls, sk, seq, ev, fr); err != nil {
				return err
			}
		}
	}
	return nil
}

func openCall(b *bbolt.Bucket, sk []byte, seq uint64, ev *agentrunnerv1.Event, fc *agentrunnerv1.FunctionCall) error {
	key := toolCallKey(sk, fc.GetId())
	if b.Get(key) != nil {
		return nil // a call id is opened once; a replay changes nothing
	}
	return putProto(b, key, store.OpenToolCall(ev, fc, seq))
}

// closeCall records the answer to a call (store.CloseToolCall). A
// response to a call the ledger does not know changes nothing.
func closeCall(b *bbolt.Bucket, sk []byte, seq uint64, ev *agentrunnerv1.Event, fr *agentrunnerv1.FunctionResponse) error {
	key := toolCallKey(sk, fr.GetId())
	v := b.Get(key)
	if v == nil {
		return nil
	}
	rec := &agentrunnerv1.ToolCall{}
	if err := proto.Unmarshal(v, rec); err != nil {
		return fmt.Errorf("decode tool call %q: %w", fr.GetId(), err)
	}
	if !store.CloseToolCall(rec, ev, fr, seq) {
		return nil
	}
	return putProto(b, key, rec)
}

func putProto(b *bbolt.Bucket, key []byte, m proto.Message) error {
	v, err := proto.Marshal(m)
	if err != nil {
		return fmt.Errorf("marshal %T: %w", m, err)
	}
	return put(b, key, v)
}

// ListToolCalls returns the session's tool-call ledger, in call order;
// ErrNotFound when the session does not exist.
func (s *Store) ListToolCalls(ctx context.Context, k store.SessionKey) ([]*agentrunnerv1.ToolCall, error) {
	if err := validateKey(k); err != nil {
		return nil, err
	}
	var out []*agentrunnerv1.ToolCall
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		sk := sessionKey(k)
		if _, err := getSession(tx, k, sk); err != nil {
			return err
		}
		c := tx.Bucket(bucketToolCalls).Cursor()
		for key, v := c.Seek(sk); key != nil && bytes.HasPrefix(key, sk); key, v = c.Next() {
			rec := &agentrunnerv1.ToolCall{}
			if err := proto.Unmarshal(v, rec); err != nil {
				return fmt.Errorf("decode tool call: %w", err)
			}
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b *agentrunnerv1.ToolCall) int {
		return cmp.Compare(a.GetCallSequence(), b.GetCallSequence())
	})
	return out, nil
}

// migrateToolCalls (schema 1 -> 2) builds the ledger of every stored
// session from its events.
func migrateToolCalls(tx *bbolt.Tx) error {
	c := tx.Bucket(bucketEvents).Cursor()
	for key, v := c.First(); key != nil; key, v = c.Next() {
		ev := &agentrunnerv1.Event{}
		if err := proto.Unmarshal(v, ev); err != nil {
			return fmt.Errorf("decode event: %w", err)
		}
		if err := recordToolCalls(tx, key[:len(key)-8], binary.BigEndian.Uint64(key[len(key)-8:]), ev); err != nil {
			return err
		}
	}
	return nil
}

func isFunctionPart(p *agentrunnerv1.Part) bool {
	return p.GetFunctionCall().GetId() != "" || p.GetFunctionResponse().GetId() != ""
}
