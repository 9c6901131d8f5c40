package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrunner/agentrunner/server/console"
)

// TestAssetsCachedAndCompressed: the console's files come gzipped to a
// client that takes gzip and whole to one that does not, each with an
// ETag of its content, and a revalidation with that ETag is a 304
// without a body: a new tab does not download app.js again.
func TestAssetsCachedAndCompressed(t *testing.T) {
	var calls atomic.Int32
	_, base := startWeb(t, gate{}, "/ar", &calls)
	want, err := fs.ReadFile(console.FS(), "app.js")
	if err != nil {
		t.Fatal(err)
	}
	// The client's own transparent gzip is off: the test reads what the
	// server sent.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func(name string, header ...string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}

	resp, body := get("app.js", "Accept-Encoding", "gzip, deflate")
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || etag == "" || !strings.Contains(resp.Header.Get("Content-Type"), "javascript") {
		t.Fatalf("app.js with gzip: %d, headers %v", resp.StatusCode, resp.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(got, want) || len(body) >= len(want)/2 {
		t.Fatalf("gzipped app.js: %d bytes of %d, unzipped equal %v (%v)", len(body), len(want), bytes.Equal(got, want), err)
	}
	if resp, body := get("app.js", "Accept-Encoding", "gzip", "If-None-Match", etag); resp.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Fatalf("revalidation with %s: %d, %d bytes", etag, resp.StatusCode, len(body))
	}

	resp, body = get("app.js")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, want) || resp.Header.Get("ETag") == etag || resp.Header.Get("ETag") == "" {
		t.Fatalf("app.js without gzip: %d, %d bytes, headers %v", resp.StatusCode, len(body), resp.Header)
	}
	resp, body = get("sessions/deep/link", "Accept-Encoding", "gzip")
	if resp.StatusCode != 200 || resp.Header.Get("ETag") == "" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("deep link: %d, headers %v", resp.StatusCode, resp.Header)
	}
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Contains(body, []byte(`<base href="/ar/">`)) {
		t.Fatalf("the page under the prefix lacks its base element: %.200s", body)
	}
}
