package remotea2atest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Options configure a stand-in that plays a careless or hostile remote
// with the header its callers send (a remote agent's secret).
type Options struct {
	// Header, when set, is the request header the stand-in records
	// (HeaderValues) and echoes back:
	//   - "$HEADER" in a message is replaced by the header's value before
	//     the executor reads it, so the echo answer carries the value;
	//   - a message holding "leak-error" is refused with a JSON-RPC error
	//     whose message quotes the value;
	//   - every CancelTask is refused the same way.
	Header string
}

// HeaderValues returns the value of Options.Header on each request
// received, in order ("" when a request had none).
func (s *Server) HeaderValues() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.headers...)
}

// echo wraps the stand-in's handler as Options say.
func (s *Server) echo(next http.Handler) http.Handler {
	if s.opts.Header == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get(s.opts.Header)
		s.mu.Lock()
		s.headers = append(s.headers, v)
		s.mu.Unlock()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &req) // a card fetch has no body
		if req.Method == "CancelTask" || bytes.Contains(body, []byte("leak-error")) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":%q}}`, orNull(req.ID), "refused: your key "+v+" is not welcome")
			return
		}
		// The value as JSON string content, so the body stays valid.
		q, _ := json.Marshal(v)
		body = bytes.ReplaceAll(body, []byte("$HEADER"), bytes.Trim(q, `"`))
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		r.Header.Del("Content-Length")
		next.ServeHTTP(w, r)
	})
}

func orNull(id json.RawMessage) string {
	if s := strings.TrimSpace(string(id)); s != "" {
		return s
	}
	return "null"
}
