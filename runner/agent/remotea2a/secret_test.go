package remotea2a

import "testing"

// TestRedactor: a secret is cut out of errors, events (any string, a
// Struct's values among them) and log attributes.
func TestRedactor(t *testing.T) {
	r := newRedactor("s3cret-value")
	if got := r.string("key s3cret-value here"); got != "key "+Redacted+" here" {
		t.Errorf("string: %q", got)
	}
	if got := r.err(errString("refused s3cret-value")).Error(); got != "refused "+Redacted {
		t.Errorf("err: %q", got)
	}
	if newRedactor("abc").secrets != nil {
		t.Error("a value shorter than minSecret is cut out: it would mangle ordinary text")
	}
}

type errString string

func (e errString) Error() string { return string(e) }
