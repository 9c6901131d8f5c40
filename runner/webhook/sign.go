package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header names of a delivery.
const (
	// HeaderDeliveryID carries the delivery's id, the same on every
	// attempt: a receiver that has seen it has the delivery already.
	HeaderDeliveryID = "Agentrunner-Delivery-Id"
	// HeaderSignature carries "t=<unix seconds>,v1=<hex signature>".
	HeaderSignature = "Agentrunner-Signature"
)

// SecretEnv is the environment variable holding the secret deliveries
// are signed with, unless an app's WebhookConfig.secret_env names another.
const SecretEnv = "AGENTRUNNER_WEBHOOK_SECRET"

// MinSecretBytes is the shortest secret accepted: HMAC-SHA256 wants a
// key of at least its output's 32 bytes; 16 is the floor of what
// guessing cannot reach.
const MinSecretBytes = 16

// Sign returns the hex HMAC-SHA256, under secret, of the timestamp in
// Unix seconds, a dot, and the body: the v1 signature of a delivery.
func Sign(secret []byte, unix int64, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(strconv.FormatInt(unix, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// SignatureHeader returns the value of HeaderSignature for body sent at t.
func SignatureHeader(secret []byte, t time.Time, body []byte) string {
	unix := t.Unix()
	return fmt.Sprintf("t=%d,v1=%s", unix, Sign(secret, unix, body))
}

// ErrBadSignature is what Verify returns, wrapped, for a delivery that
// is not signed with the secret, or signed too long ago.
var ErrBadSignature = errors.New("webhook signature does not verify")

// Verify checks a delivery's HeaderSignature value against its body, as
// a receiver written in Go would: a v1 signature under secret, made at
// most tolerance before now (or after it: clocks differ). A receiver
// that verifies also keeps delivery ids it has seen, against replays
// within the tolerance.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var (
		unix int64
		sigs []string
		err  error
	)
	for _, kv := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		switch k {
		case "t":
			if unix, err = strconv.ParseInt(v, 10, 64); err != nil {
				return fmt.Errorf("%w: timestamp %q", ErrBadSignature, v)
			}
		case "v1":
			sigs = append(sigs, v)
		}
	}
	if unix == 0 || len(sigs) == 0 {
		return fmt.Errorf("%w: header %q lacks t= or v1=", ErrBadSignature, header)
	}
	if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed at %d, %s from now", ErrBadSignature, unix, d)
	}
	want := Sign(secret, unix, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return ErrBadSignature
}
