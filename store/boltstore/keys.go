package boltstore

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/agentrunner/agentrunner/store"
)

// Tuple encoding. A string is written byte by byte with 0x00 escaped as
// 0x00 0xFF and terminated by 0x00 0x01, so that comparing encodings
// bytewise compares the strings, and a shorter tuple is a prefix of any
// longer tuple that starts with the same elements.

// maxKeyPart bounds each string in a key; bbolt keys are limited to 32 KiB.
const maxKeyPart = 1024

func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			b = append(b, 0, 0xFF)
		} else {
			b = append(b, s[i])
		}
	}
	return append(b, 0, 1)
}

func appendUint64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

// readString decodes one string from the front of b and returns the rest.
func readString(b []byte) (string, []byte, error) {
	var out []byte
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			continue
		}
		if i+1 >= len(b) {
			break
		}
		switch b[i+1] {
		case 1:
			out = append(out, b[:i]...)
			return string(out), b[i+2:], nil
		case 0xFF:
			out = append(out, b[:i+1]...)
			b = b[i+2:]
			i = -1
		default:
			return "", nil, errors.New("bad escape in key")
		}
	}
	return "", nil, errors.New("unterminated string in key")
}

// successor returns the smallest key greater than every key that has
// prefix p, where p ends in a string terminator (0x00 0x01).
func successor(p []byte) []byte {
	s := bytes.Clone(p)
	s[len(s)-1]++ // 0x00 0x01 -> 0x00 0x02: sorts after every continuation
	return s
}

func checkParts(parts ...string) error {
	for _, p := range parts {
		if err := checkPart(p); err != nil {
			return err
		}
	}
	return nil
}

// checkPart is checkParts for one part: the store.KeyCheck of this store.
func checkPart(p string) error {
	if len(p) > maxKeyPart {
		return fmt.Errorf("key part of %d bytes exceeds %d: %w", len(p), maxKeyPart, store.ErrInvalidArgument)
	}
	return nil
}

func sessionKey(k store.SessionKey) []byte {
	b := make([]byte, 0, len(k.App)+len(k.User)+len(k.Session)+6+8)
	return appendString(appendString(appendString(b, k.App), k.User), k.Session)
}

func eventKey(sk []byte, seq uint64) []byte {
	return appendUint64(append(make([]byte, 0, len(sk)+8), sk...), seq)
}

func appStateKey(app string) []byte { return appendString(nil, app) }

func userStateKey(app, user string) []byte { return appendString(appendString(nil, app), user) }

// artifactPrefix is T(app, user, scope): every artifact of one scope.
func artifactPrefix(app, user, scope string) []byte {
	return appendString(appendString(appendString(nil, app), user), scope)
}

// artifactNameKey is T(app, user, scope, name): every version of one artifact.
func artifactNameKey(k store.SessionKey, filename string) []byte {
	return appendString(artifactPrefix(k.App, k.User, store.ArtifactScope(k, filename)), filename)
}

func artifactVersionKey(nameKey []byte, version int64) []byte {
	return appendUint64(bytes.Clone(nameKey), ^uint64(version))
}

func versionFromKey(key []byte) int64 {
	return int64(^binary.BigEndian.Uint64(key[len(key)-8:]))
}

// runKey is T(app, user, session) U(anchor) U(create_time) T(run_id), a
// key of the events bucket: a run's record sits among its session's
// events, right after event number anchor (the session's last sequence
// when the record was first written), so that the writes of a run touch
// the pages its events do. Event keys are T(app, user, session) U(seq),
// shorter than any run key (isRunKey). Records of one anchor are in
// creation order, ties broken by id. The time is Unix nanoseconds with
// the sign bit flipped, so that byte order is time order on both sides
// of 1970.
func runKey(sk []byte, anchor uint64, createNanos int64, runID string) []byte {
	b := make([]byte, 0, len(sk)+16+len(runID)+2)
	return appendString(appendUint64(appendUint64(append(b, sk...), anchor), uint64(createNanos)^1<<63), runID)
}

// isRunKey reports whether a key of session sk in the events bucket is a
// run record's rather than an event's.
func isRunKey(key, sk []byte) bool { return len(key) > len(sk)+8 }

// runNanos returns the create time a run key of session sk holds.
func runNanos(key, sk []byte) int64 {
	return int64(binary.BigEndian.Uint64(key[len(sk)+8:]) ^ 1<<63)
}

// runIDOfKey returns the run id a run key of session sk ends with.
func runIDOfKey(key, sk []byte) (string, error) {
	if len(key) < len(sk)+16 {
		return "", errors.New("short run key")
	}
	id, rest, err := readString(key[len(sk)+16:])
	if err == nil && len(rest) != 0 {
		err = errors.New("trailing bytes in run key")
	}
	return id, err
}

// runIDKey is T(run_id), the key of the run_ids index of schemas 3 to 5.
func runIDKey(runID string) []byte { return appendString(nil, runID) }

// recordKey is 'r' T(run_id), the key of a run's record in run_records.
// Run ids start with their creation time: a commit's records, first or
// final, are those of recent runs, on the last pages of the records.
func recordKey(runID string) []byte { return appendString([]byte{'r'}, runID) }

// unfinishedKey is 'u' T(run_id), the mark of an unfinished run that
// schemas 6 to 9 kept in run_records (migrateUnfinishedMarks).
func unfinishedKey(runID string) []byte { return appendString([]byte{'u'}, runID) }

// unfinishedPrefix starts every unfinishedKey.
var unfinishedPrefix = []byte{'u'}

// runRequestKey is T(app, user, session, request_id), the key of the
// run_requests index.
func runRequestKey(sk []byte, requestID string) []byte {
	return appendString(bytes.Clone(sk), requestID)
}

// Page tokens are the URL-safe base64 of a key or a number; they are opaque
// to clients and checked against the listing they continue.

func encodeToken(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func decodeToken(tok string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("malformed page_token: %w", store.ErrInvalidArgument)
	}
	return b, nil
}
