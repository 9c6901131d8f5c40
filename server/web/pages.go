package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"strings"
	"time"
)

// pages serves what vanguard does not route: the console's files, the
// page for deep links, and an RPC error for a method no service has.
type pages struct {
	files fs.FS
	// index is index.html with its base element set to the prefix.
	index []byte
}

// baseElement is the base element index.html carries for the root; it
// is rewritten to the prefix (package console documents it).
const baseElement = `<base href="/">`

func newPages(files fs.FS, prefix string) (*pages, error) {
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		return nil, fmt.Errorf("web: the console has no index.html: %w", err)
	}
	index = bytes.Replace(index, []byte(baseElement), []byte(`<base href="`+prefix+`/">`), 1)
	return &pages{files: files, index: index}, nil
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
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name != "" && name != "index.html" {
		if p.serveFile(w, r, name) {
			return
		}
		// A missing asset is an error to see, not a page that loads
		// and then fails to run.
		if path.Ext(name) != "" {
			http.NotFound(w, r)
			return
		}
	}
	// A new build must reach browsers at once: revalidate the page each
	// time (the assets it names may be cached).
	h.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(p.index))
}

// serveFile serves the named regular file, reporting false when there is
// none (a directory is none: it is a deep link, not a listing).
func (p *pages) serveFile(w http.ResponseWriter, r *http.Request, name string) bool {
	f, err := p.files.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		b, err := io.ReadAll(f)
		if err != nil {
			return false
		}
		rs = bytes.NewReader(b)
	}
	http.ServeContent(w, r, name, st.ModTime(), rs)
	return true
}

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
