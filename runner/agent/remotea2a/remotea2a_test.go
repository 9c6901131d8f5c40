package remotea2a

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHeaderOnlyToItsHosts: the secret header goes to the hosts it is
// given, and not to another host, even when one of them redirects there.
func TestHeaderOnlyToItsHosts(t *testing.T) {
	seen := map[string]string{}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen["other"] = r.Header.Get("X-Key")
	}))
	defer other.Close()
	own := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen["own"+r.URL.Path] = r.Header.Get("X-Key")
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, other.URL+"/", http.StatusFound)
		}
	}))
	defer own.Close()
	hc, err := HeaderClient("X-Key: s3cret", strings.TrimPrefix(own.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{own.URL + "/", own.URL + "/redirect"} {
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if seen["own/"] != "s3cret" || seen["own/redirect"] != "s3cret" {
		t.Errorf("own host got %q and %q, want the header both times", seen["own/"], seen["own/redirect"])
	}
	if v, ok := seen["other"]; !ok || v != "" {
		t.Errorf("the host redirected to got %q (reached %v), want no header", v, ok)
	}
}
