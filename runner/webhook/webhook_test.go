package webhook_test

import (
	"errors"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/webhook"
)

// The vector was computed apart from this code, with both
//
//	python3 -c "import hmac,hashlib; print(hmac.new(b'whsec_test_0123456789',
//	  b'1700000000.{\"runId\":\"r-1\",\"status\":\"RUN_STATUS_SUCCEEDED\"}', hashlib.sha256).hexdigest())"
//	printf '%s' '1700000000.{"runId":"r-1","status":"RUN_STATUS_SUCCEEDED"}' | openssl dgst -sha256 -hmac whsec_test_0123456789
const (
	vectorSecret = "whsec_test_0123456789"
	vectorUnix   = 1700000000
	vectorBody   = `{"runId":"r-1","status":"RUN_STATUS_SUCCEEDED"}`
	vectorSig    = "df23d6369bc07fc54f933ca60f86aacbf5e84ef03498eaaa73aa78deec44bb25"
)

func TestSignVector(t *testing.T) {
	if got := webhook.Sign([]byte(vectorSecret), vectorUnix, []byte(vectorBody)); got != vectorSig {
		t.Fatalf("Sign = %s, want %s", got, vectorSig)
	}
	at := time.Unix(vectorUnix, 0)
	h := webhook.SignatureHeader([]byte(vectorSecret), at, []byte(vectorBody))
	if want := "t=1700000000,v1=" + vectorSig; h != want {
		t.Fatalf("SignatureHeader = %s, want %s", h, want)
	}
}

func TestVerify(t *testing.T) {
	secret, body := []byte(vectorSecret), []byte(vectorBody)
	at := time.Unix(vectorUnix, 0)
	h := webhook.SignatureHeader(secret, at, body)
	if err := webhook.Verify(secret, h, body, at.Add(time.Minute), 5*time.Minute); err != nil {
		t.Fatalf("Verify of a good signature: %v", err)
	}
	bad := []struct {
		name   string
		secret string
		header string
		body   string
		now    time.Time
	}{
		{"other secret", "another-secret-0123", h, vectorBody, at},
		{"other body", vectorSecret, h, `{"runId":"r-2"}`, at},
		{"too old", vectorSecret, h, vectorBody, at.Add(6 * time.Minute)},
		{"from the future", vectorSecret, h, vectorBody, at.Add(-6 * time.Minute)},
		{"no timestamp", vectorSecret, "v1=" + vectorSig, vectorBody, at},
		{"no signature", vectorSecret, "t=1700000000", vectorBody, at},
		{"timestamp changed", vectorSecret, "t=1700000001,v1=" + vectorSig, vectorBody, at},
	}
	for _, tc := range bad {
		err := webhook.Verify([]byte(tc.secret), tc.header, []byte(tc.body), tc.now, 5*time.Minute)
		if !errors.Is(err, webhook.ErrBadSignature) {
			t.Errorf("%s: Verify = %v, want ErrBadSignature", tc.name, err)
		}
	}
}

// TestBackoffBounds: each retry waits between half its step and its
// step, the step doubling from min up to max, whatever the jitter.
func TestBackoffBounds(t *testing.T) {
	const minB, maxB = time.Second, time.Minute
	step := minB
	for attempt := 1; attempt <= 30; attempt++ {
		for _, r := range []float64{0, 0.5, 0.999999} {
			got := webhook.Backoff(attempt, minB, maxB, r)
			if got < step/2 || got > step {
				t.Fatalf("Backoff(%d, r=%v) = %s, want within [%s, %s]", attempt, r, got, step/2, step)
			}
		}
		step = min(2*step, maxB)
	}
	if got := webhook.Backoff(1000, minB, maxB, 0.999999); got > maxB {
		t.Fatalf("Backoff(1000) = %s, past max %s", got, maxB)
	}
}

func TestAllow(t *testing.T) {
	a, err := webhook.ParseAllow([]string{"hooks.example.com", "127.0.0.1:9000", "*.svc.internal", " ::1 ", ""})
	if err != nil {
		t.Fatal(err)
	}
	ok := []string{
		"https://hooks.example.com/run-ended",
		"http://HOOKS.example.com:8080/x?y=1",
		"http://127.0.0.1:9000/",
		"https://a.b.svc.internal/hook",
		"http://[::1]:1234/",
	}
	for _, u := range ok {
		if err := a.Check(u); err != nil {
			t.Errorf("Check(%s) = %v, want allowed", u, err)
		}
	}
	refused := map[string]bool{ // url: refused for its host (ErrNotAllowed)
		"https://evil.example.com/":          true,
		"http://127.0.0.1:9001/":             true,
		"http://127.0.0.1/":                  true,
		"https://svc.internal/":              true,
		"https://hooks.example.com.evil.io":  true,
		"ftp://hooks.example.com/":           false,
		"https://user:pw@hooks.example.com/": false,
		"/relative":                          false,
		"https:///nohost":                    false,
		"::not a url":                        false,
	}
	for u, host := range refused {
		err := a.Check(u)
		if err == nil {
			t.Errorf("Check(%s) allowed it", u)
			continue
		}
		if errors.Is(err, webhook.ErrNotAllowed) != host {
			t.Errorf("Check(%s) = %v; host refusal %v, want %v", u, err, !host, host)
		}
	}
	if err := (webhook.Allow{}).Check("https://hooks.example.com/"); !errors.Is(err, webhook.ErrNotAllowed) {
		t.Errorf("the empty list allowed a URL: %v", err)
	}
	for _, e := range []string{"https://x.com/", "*.", "*.x.com:443", "user@x.com"} {
		if _, err := webhook.ParseAllow([]string{e}); err == nil {
			t.Errorf("ParseAllow(%q) accepted it", e)
		}
	}
}
