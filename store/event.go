package store

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// StoredEvent checks an event to append to session k, for a store whose
// key parts pass check, and returns the copy the store keeps: no sequence
// (the store gives it one), an id (newID's when it has none), a timestamp
// (now's when it has none) and no "temp:" state keys, which live for one
// invocation only. Every store appends the same event for the same input
// this way; its encoding is the store's to check.
func StoredEvent(k SessionKey, ev *agentrunnerv1.Event, check KeyCheck, newID func() string, now func() time.Time) (*agentrunnerv1.Event, error) {
	if err := ValidateKey(k, check); err != nil {
		return nil, err
	}
	switch {
	case ev == nil:
		return nil, fmt.Errorf("event is missing: %w", ErrInvalidArgument)
	case ev.GetPartial():
		return nil, fmt.Errorf("event is partial; partial events are never stored: %w", ErrInvalidArgument)
	}
	if ev.GetUsageMetadata() != nil {
		// The spend ledger keys the call's totals by its model, and keeps
		// its currency: a client's event names both, which must fit the
		// store's keys like every other key part.
		if err := checkAll(check, SpendModel(ev), ev.GetCost().GetCurrency()); err != nil {
			return nil, fmt.Errorf("event's model or currency: %w", err)
		}
	}
	stored := ev.CloneVT()
	stored.Sequence = 0
	if stored.Id == "" {
		stored.Id = newID()
	}
	if stored.Timestamp == nil {
		stored.Timestamp = timestamppb.New(now())
	}
	if a := stored.GetActions(); a != nil {
		a.StateDelta = WithoutTemp(a.StateDelta)
	}
	return stored, nil
}

// RepeatedAppend answers an append of ev (stored is StoredEvent's copy of
// it) whose id the session holds already in event held: held itself and
// true when the content is the same, so that a retried append is
// idempotent, else ErrAlreadyExists. A timestamp the store set is not
// compared: a retry gets a new one.
func RepeatedAppend(held, stored, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, bool, error) {
	a, b := held.CloneVT(), stored.CloneVT()
	a.Sequence, b.Sequence = 0, 0
	if ev.GetTimestamp() == nil {
		a.Timestamp, b.Timestamp = nil, nil
	}
	if !proto.Equal(a, b) {
		return nil, false, fmt.Errorf("event id %q is held by event %d of the session, with other content: %w", ev.GetId(), held.GetSequence(), ErrAlreadyExists)
	}
	return held, true, nil
}

// DecodeEvent decodes a stored event, with the error every store reports
// for a record it cannot read.
func DecodeEvent(b []byte) (*agentrunnerv1.Event, error) {
	ev := &agentrunnerv1.Event{}
	if err := proto.Unmarshal(b, ev); err != nil {
		return nil, fmt.Errorf("decode event: %w", err)
	}
	return ev, nil
}
