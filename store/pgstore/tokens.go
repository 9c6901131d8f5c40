package pgstore

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/agentrunner/agentrunner/store"
)

// Page tokens are the URL-safe base64 of a number (events, artifact
// versions), a filename (artifacts) or a small JSON object naming the
// listing and its last item (sessions, runs); they are opaque to clients
// and checked against the listing they continue.

// sessionToken continues ListSessions after the session named.
type sessionToken struct {
	App     string `json:"a"`
	User    string `json:"u"`
	Session string `json:"s"`
}

// runToken continues ListRuns of a session after the run named by its
// place in the listing order.
type runToken struct {
	App     string `json:"a"`
	User    string `json:"u"`
	Session string `json:"s"`
	Anchor  uint64 `json:"n"`
	Nanos   int64  `json:"t"`
	RunID   string `json:"r"`
}

func encodeToken(v any) string {
	b, _ := json.Marshal(v) // plain structs of strings and numbers
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(tok string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) == 0 || json.Unmarshal(b, v) != nil {
		return fmt.Errorf("malformed page_token: %w", store.ErrInvalidArgument)
	}
	return nil
}

func encodeNumber(n uint64) string {
	return base64.RawURLEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, n))
}

func decodeNumber(tok string) (uint64, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != 8 {
		return 0, fmt.Errorf("malformed page_token: %w", store.ErrInvalidArgument)
	}
	return binary.BigEndian.Uint64(b), nil
}

func encodeString(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func decodeString(tok string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) == 0 {
		return "", fmt.Errorf("malformed page_token: %w", store.ErrInvalidArgument)
	}
	return string(b), nil
}
