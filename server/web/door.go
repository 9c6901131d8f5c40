package web

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// a2aDoor stands in front of A2A's HTTP bindings as the gate does in
// front of the RPCs: a request that carries a body (JSON-RPC, REST's
// POSTs) needs credentials before a byte of it is read, and its body is
// read whole, within BodyTimeout and the request limit, before A2A's
// handler sees it. The agent cards (GETs) stay open to all.
type a2aDoor struct {
	next         http.Handler
	limit        int64
	authenticate func(*http.Request) error
	bodyTimeout  time.Duration
}

func (d *a2aDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		d.next.ServeHTTP(w, r)
		return
	}
	if d.authenticate != nil {
		if err := d.authenticate(r); err != nil {
			stopReading(w, r)
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthenticated: "+err.Error(), http.StatusUnauthorized)
			return
		}
	}
	body, err := readWithin(w, r, d.limit, d.bodyTimeout)
	if err != nil {
		code := http.StatusBadRequest
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			code = http.StatusRequestEntityTooLarge
			err = fmt.Errorf("the request is larger than the %d bytes a request may take (--max-request-bytes)", d.limit)
		}
		http.Error(w, err.Error(), code)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	d.next.ServeHTTP(w, r)
}

// readWithin reads a request's body whole: at most limit bytes, within
// timeout of now (zero: no bound). The deadline is lifted once the body
// is in, so that the response, a stream perhaps, has all the time it
// needs: on HTTP/1.1 a read deadline still pending while the handler
// runs would end the request's context when it passes.
func readWithin(w http.ResponseWriter, r *http.Request, limit int64, timeout time.Duration) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	if r.ContentLength == 0 {
		return nil, nil
	}
	rc := http.NewResponseController(w)
	if timeout > 0 {
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	var buf []byte
	var err error
	if r.ContentLength >= 0 {
		buf = make([]byte, r.ContentLength)
		_, err = io.ReadFull(body, buf)
	} else {
		buf, err = io.ReadAll(body)
	}
	if err != nil {
		stopReading(w, r)
		return nil, err
	}
	if timeout > 0 {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return buf, nil
}

// stopReading makes sure the rest of a refused request's body is never
// waited on: net/http reads what is left of a small body before it sends
// the answer, on HTTP/1.1, unless the connection is to close after it.
// So it closes: a client that sends slowly, or never, holds nothing.
// (A read deadline in the past would do it too, but it also cuts
// net/http's own background read of the connection, which ends the
// connection's context under the requests that follow.)
func stopReading(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 && r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
}

// limitListener accepts at most n connections at once: the next Accept
// waits until one closes, so a flood of idle or slow connections cannot
// take every file descriptor.
func limitListener(l net.Listener, n int) net.Listener {
	return &limitedListener{Listener: l, slots: make(chan struct{}, n)}
}

type limitedListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitedListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

type limitedConn struct {
	net.Conn
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// accessLog logs one line per HTTP request, as the gRPC port logs one per
// call: 5xx answers as errors, 4xx as info (the client's mistakes), the
// rest at debug, so that a busy server logs what needs a look. Tokens,
// bodies and queries are never logged.
func accessLog(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		level := slog.LevelDebug
		switch {
		case code >= 500:
			level = slog.LevelError
		case code >= 400:
			level = slog.LevelInfo
		}
		if !log.Enabled(r.Context(), level) {
			return
		}
		log.LogAttrs(r.Context(), level, "http",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", code),
			slog.String("grpc_status", sw.Header().Get("Grpc-Status")),
			slog.Int64("bytes", sw.bytes),
			slog.String("remote", r.RemoteAddr),
			slog.Duration("duration", time.Since(start)))
	})
}

// statusWriter records the status and size of a response. It is a
// Flusher (grpc-go's ServeHTTP needs one) and unwraps for
// http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	code  int
	bytes int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
