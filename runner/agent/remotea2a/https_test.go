package remotea2a

import (
	"net/http"
	"testing"
)

// recorder is a transport that records the header each request carried
// and answers 204.
type recorder struct{ got map[string]string }

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got[req.URL.String()] = req.Header.Get("X-Key")
	return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: req}, nil
}

// TestHeaderOnlyOverHTTPS: the secret header crosses the network only
// over https; plain http gets it on a loopback host alone, and a host
// not listed never does.
func TestHeaderOnlyOverHTTPS(t *testing.T) {
	hc, err := HeaderClient("X-Key: s3cret-value", "partner.example", "127.0.0.1:8080", "localhost:9")
	if err != nil {
		t.Fatal(err)
	}
	rec := recorder{got: map[string]string{}}
	tr := hc.Transport.(headerTransport)
	tr.base = rec
	hc.Transport = tr
	want := map[string]string{
		"https://partner.example/x":  "s3cret-value",
		"http://partner.example/x":   "",
		"http://127.0.0.1:8080/x":    "s3cret-value",
		"http://localhost:9/x":       "s3cret-value",
		"https://elsewhere.example/": "",
	}
	for u := range want {
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for u, w := range want {
		if rec.got[u] != w {
			t.Errorf("%s got header %q, want %q", u, rec.got[u], w)
		}
	}
}
