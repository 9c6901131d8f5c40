package store

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// eventTimestampField is the field number of Event.timestamp.
const eventTimestampField = 5

// EventTime returns the timestamp of an encoded Event without decoding
// the rest of it: a time filter tests every event of a range, most of
// which it leaves out. An event without a timestamp is at the zero
// Timestamp (1970-01-01T00:00:00Z), as Event.GetTimestamp().AsTime() says.
func EventTime(encoded []byte) (time.Time, error) {
	var secs, nanos int64
	for b := encoded; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return time.Time{}, fmt.Errorf("decode event: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num != eventTimestampField || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return time.Time{}, fmt.Errorf("decode event: %w", protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		ts, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return time.Time{}, fmt.Errorf("decode event timestamp: %w", protowire.ParseError(n))
		}
		b = b[n:]
		// A message field seen twice is merged: later scalars win.
		if err := mergeTimestamp(ts, &secs, &nanos); err != nil {
			return time.Time{}, err
		}
	}
	return time.Unix(secs, nanos).UTC(), nil
}

// mergeTimestamp reads the seconds (1) and nanos (2) of an encoded
// google.protobuf.Timestamp into secs and nanos.
func mergeTimestamp(b []byte, secs, nanos *int64) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("decode event timestamp: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("decode event timestamp: %w", protowire.ParseError(n))
			}
			b = b[n:]
			if num == 1 {
				*secs = int64(v)
			} else {
				*nanos = int64(int32(v))
			}
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return fmt.Errorf("decode event timestamp: %w", protowire.ParseError(n))
		}
		b = b[n:]
	}
	return nil
}

// KeepsEncoded reports whether the filter's time test keeps the encoded
// event v; with no AfterTime it reads nothing.
func (f EventFilter) KeepsEncoded(v []byte) (bool, error) {
	if f.AfterTime == nil {
		return true, nil
	}
	ts, err := EventTime(v)
	if err != nil {
		return false, err
	}
	return f.Keeps(ts), nil
}

// Filter returns the event filter of the options.
func (o GetOptions) Filter() EventFilter {
	return EventFilter{AfterSequence: o.AfterSequence, AfterTime: o.AfterTime}
}
