package boltstore

import (
	"bytes"
	"cmp"
	"testing"

	"github.com/agentrunner/agentrunner/store"
)

// FuzzKeys checks the tuple encoding every bbolt key is made of: a string
// reads back as itself with the rest of the key intact, two session keys
// compare as their (app, user, session) tuples do, one session's key is a
// prefix of none of another's event keys, and successor bounds exactly
// the keys under a prefix.
func FuzzKeys(f *testing.F) {
	f.Add("app", "user", "session", "app", "user", "session2", uint64(7))
	f.Add("a\x00", "", "\x00\xff", "a", "\x00", "\x01", uint64(0))
	f.Add("x\x00\x01y", "u", "s", "x", "u\x00\x02", "s", ^uint64(0))
	f.Fuzz(func(t *testing.T, a1, u1, s1, a2, u2, s2 string, seq uint64) {
		k1 := store.SessionKey{App: a1, User: u1, Session: s1}
		k2 := store.SessionKey{App: a2, User: u2, Session: s2}
		b1, b2 := sessionKey(k1), sessionKey(k2)

		rest := append(bytes.Clone(b1), 0xAB)
		for _, want := range []string{a1, u1, s1} {
			got, r, err := readString(rest)
			if err != nil || got != want {
				t.Fatalf("readString = %q, %v; want %q", got, err, want)
			}
			rest = r
		}
		if !bytes.Equal(rest, []byte{0xAB}) {
			t.Fatalf("after the key: %x, want ab", rest)
		}

		want := cmp.Or(cmp.Compare(a1, a2), cmp.Compare(u1, u2), cmp.Compare(s1, s2))
		if got := bytes.Compare(b1, b2); got != want {
			t.Fatalf("keys of %v and %v compare %d, tuples %d", k1, k2, got, want)
		}

		ev2 := eventKey(b2, seq)
		if k1 != k2 && bytes.HasPrefix(ev2, b1) {
			t.Fatalf("an event key of %v starts with the key of %v", k2, k1)
		}
		if under := bytes.HasPrefix(ev2, b1); under != (bytes.Compare(ev2, b1) >= 0 && bytes.Compare(ev2, successor(b1)) < 0) {
			t.Fatalf("successor(%x) misplaces %x", b1, ev2)
		}
	})
}

// FuzzReadString feeds arbitrary bytes to the key decoder: it must fail
// cleanly or return a string whose encoding is what it consumed.
func FuzzReadString(f *testing.F) {
	f.Add([]byte("abc\x00\x01rest"))
	f.Add([]byte("\x00\xff\x00\x01"))
	f.Add([]byte("\x00"))
	f.Add([]byte("\x00\x07"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, rest, err := readString(b)
		if err != nil {
			return
		}
		enc := appendString(nil, s)
		if !bytes.Equal(append(enc, rest...), b) {
			t.Fatalf("readString(%x) = %q + %x, which encodes back to %x", b, s, rest, append(enc, rest...))
		}
	})
}

// FuzzStringsLen: stringsLen measures the first strings of any bytes as
// readString reads them, one after the other, and fails where it fails.
func FuzzStringsLen(f *testing.F) {
	f.Add([]byte("a\x00\x01b\x00\x01c\x00\x01rest"), 3)
	f.Add([]byte("\x00\xff\x00\x01\x00\x01"), 2)
	f.Add([]byte("a\x00\x01\x00"), 2)
	f.Add([]byte("a\x00\x07"), 1)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		n = n%4 + 1
		if n < 1 {
			n += 4
		}
		want, rest := 0, b
		for range n {
			_, r, err := readString(rest)
			if err != nil {
				want = -1
				break
			}
			want, rest = len(b)-len(r), r
		}
		if got := stringsLen(b, n); got != want {
			t.Fatalf("stringsLen(%x, %d) = %d, want %d", b, n, got, want)
		}
	})
}
