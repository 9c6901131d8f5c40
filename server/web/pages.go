package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strings"
	"time"
)

// pages serves what vanguard does not route: the console's files, the
// page for deep links, and an RPC error for a method no service has.
type pages struct {
	// assets are the console's files, read once: they are embedded and
	// never change while the process runs. "index.html" has its base
	// element set to the prefix.
	assets map[string]*asset
}

// asset is one file as served: its bytes, gzipped when that saves
// something, and an ETag of its content. Embedded files have no
// modification time, so without the ETag every new tab would download
// app.js again; with it a browser revalidates and gets a 304.
type asset struct {
	body, gz []byte
	etag     string
}

// baseElement is the base element index.html carries for the root; it
// is rewritten to the prefix (package console documents it).
const baseElement = `<base href="/">`

func newPages(files fs.FS, prefix string) (*pages, error) {
	p := &pages{assets: map[string]*asset{}}
	err := fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		body, err := fs.ReadFile(files, name)
		if err != nil {
			return err
		}
		if name == "index.html" {
			body = bytes.Replace(body, []byte(baseElement), []byte(`<base href="`+prefix+`/">`), 1)
		}
		p.assets[name] = newAsset(body)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: read the console's files: %w", err)
	}
	if p.assets["index.html"] == nil {
		return nil, errors.New("web: the console has no index.html")
	}
	return p, nil
}

// newAsset prepares body for serving.
func newAsset(body []byte) *asset {
	sum := sha256.Sum256(body)
	a := &asset{body: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression) // the level is valid
	_, _ = zw.Write(body)                                  // a bytes.Buffer does not fail
	if zw.Close() == nil && b.Len() < len(body)*9/10 {
		a.gz = b.Bytes()
	}
	return a
}

// serve writes a, gzipped when the client takes it, with its ETag and
// the other caching headers: revalidate every time (file names carry no
// hash, so a new build must be seen at once), which a 304 makes cheap.
func (a *asset) serve(w http.ResponseWriter, r *http.Request, name string) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Add("Vary", "Accept-Encoding")
	body, etag := a.body, a.etag
	if a.gz != nil && acceptsGzip(r) {
		body, etag = a.gz, a.etag[:len(a.etag)-1]+`-gz"`
		h.Set("Content-Encoding", "gzip")
		if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
			h.Set("Content-Type", ct) // not sniffed from the gzip bytes
		}
	}
	h.Set("ETag", etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(params, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

func (p *pages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isRPC(r) {
		unknownRPC(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	// The console acts for whoever is signed in: no other site may frame
	// it and have a click land on a button.
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("Referrer-Policy", "no-referrer")
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if a := p.assets[name]; a != nil && name != "index.html" {
		a.serve(w, r, name)
		return
	}
	// A missing asset is an error to see, not a page that loads and then
	// fails to run; any other path is a deep link (a directory too: no
	// listings).
	if name != "" && name != "index.html" && path.Ext(name) != "" {
		http.NotFound(w, r)
		return
	}
	p.assets["index.html"].serve(w, r, "index.html")
}

// contentSecurityPolicy lets the console's page load its own script and
// style and nothing else: no inline script, no other origin, no frame
// around it. It talks only to its own origin (connect-src), and shows
// images it made from bytes it fetched (blob:) or the empty icon (data:).
// Should anything slip HTML into the page, no script of it runs and
// nothing leaves for another host.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'self'; form-action 'none'; frame-ancestors 'none'"

// rpcPath is the path of an RPC, /package.Service/Method.
var rpcPath = regexp.MustCompile(`^/[A-Za-z_]\w*(\.[A-Za-z_]\w*)+/[A-Za-z_]\w*$`)

// isRPC tells a request for a method no service has from a page load:
// a POST, a gRPC, gRPC-Web or Connect request, or a path shaped like an
// RPC's.
func isRPC(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return r.Method == http.MethodPost ||
		strings.HasPrefix(ct, "application/grpc") ||
		strings.HasPrefix(ct, "application/connect+") ||
		r.Header.Get("Connect-Protocol-Version") != "" ||
		r.URL.Query().Get("connect") != "" ||
		rpcPath.MatchString(r.URL.Path)
}

// unknownRPC answers a request for a method no service has with
// Unimplemented, in the request's protocol: gRPC and gRPC-Web as a
// trailers-only response, anything else as a Connect error (JSON, 404),
// which a person reading the response also understands.
func unknownRPC(w http.ResponseWriter, r *http.Request) {
	msg := fmt.Sprintf("%s %s is not an RPC this server serves", r.Method, r.URL.Path)
	if ct := r.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/grpc") {
		h := w.Header()
		h.Set("Content-Type", ct)
		h.Set("Grpc-Status", "12") // Unimplemented
		h.Set("Grpc-Message", grpcMessage(msg))
		w.WriteHeader(http.StatusOK)
		return
	}
	body, _ := json.Marshal(map[string]string{"code": "unimplemented", "message": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write(body)
}

// grpcMessage percent-encodes s as the grpc-message header needs:
// bytes outside printable ASCII, and '%' itself.
func grpcMessage(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
