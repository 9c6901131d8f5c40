package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/server/console"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// fuzzListener serves health and the test RunnerService (gate) on a
// loopback port, with authentication when auth (a bearer token "ok").
func fuzzListener(f *testing.F, auth bool) string {
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	cfg := Config{GRPC: gs, Console: console.FS(), MaxMessageBytes: 1 << 16}
	if auth {
		cfg.Authenticate = func(r *http.Request) error {
			if r.Header.Get("Authorization") != "Bearer ok" {
				return errors.New("no credentials")
			}
			return nil
		}
	}
	s, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go func() { _ = s.Serve(lis) }()
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		gs.Stop()
	})
	return URL(lis.Addr(), false, "")
}

// FuzzHTTPListener sends a request of any body, content type, encoding
// and timeout to an RPC of the HTTP listener, with and without
// authentication: the answer is never a 5xx, nor an Internal, Unknown or
// DataLoss in the request's protocol, and the server stays up.
func FuzzHTTPListener(f *testing.F) {
	urls := [2]string{fuzzListener(f, false), fuzzListener(f, true)}
	client := &http.Client{Timeout: 10 * time.Second}
	f.Add(uint8(0), uint8(3), uint8(0), "", []byte("\x00\x00\x00\x00\x02{}\x02\x00\x00\x00\x02{}"))
	f.Add(uint8(1), uint8(2), uint8(1), "1", []byte(`{"service":""}`))
	f.Add(uint8(0), uint8(0), uint8(2), "", []byte("\x00\x00\x00\x00\x00"))
	f.Add(uint8(1), uint8(5), uint8(3), "soon", []byte("\x01\x00\x00\x00\x03abc"))
	f.Fuzz(func(t *testing.T, which, ctIndex, headers uint8, timeout string, body []byte) {
		cts := []string{"application/grpc-web+proto", "application/grpc-web+json", "application/json", "application/connect+proto", "application/connect+json", "application/proto", "application/grpc", "text/plain"}
		req, err := http.NewRequest(http.MethodPost, urls[which%2]+"grpc.health.v1.Health/Check", bytes.NewReader(body))
		if err != nil {
			t.Skip()
		}
		req.Header.Set("Content-Type", cts[int(ctIndex)%len(cts)])
		req.Header.Set("Connect-Protocol-Version", "1")
		if headers&1 != 0 {
			req.Header.Set("Authorization", "Bearer ok")
		}
		for i, h := range []string{"Content-Encoding", "Connect-Content-Encoding", "Grpc-Encoding"} {
			if headers&(2<<i) != 0 {
				req.Header.Set(h, "gzip")
			}
		}
		if timeout != "" && headers&16 != 0 {
			req.Header.Set("Connect-Timeout-Ms", timeout)
		} else if timeout != "" && headers&32 != 0 {
			req.Header.Set("Grpc-Timeout", timeout)
		}
		if !httpHeaderSafe(req.Header) {
			t.Skip() // net/http would refuse to send it
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("no answer (the listener died?): %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if bad := serverFault(resp, b); bad != "" {
			t.Fatalf("%s for %q %q: %d %q %q", bad, req.Header, body, resp.StatusCode, resp.Header, b)
		}
	})
}

// httpHeaderSafe reports whether every header value is one net/http
// sends.
func httpHeaderSafe(h http.Header) bool {
	for _, vs := range h {
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
					return false
				}
			}
		}
	}
	return true
}

// serverFault says how an answer blames the server, or "".
func serverFault(resp *http.Response, body []byte) string {
	code := resp.Header.Get("Grpc-Status")
	if code == "" {
		code = resp.Trailer.Get("Grpc-Status")
	}
	switch code {
	case "2", "13", "15":
		return "grpc-status " + code
	}
	for _, c := range []string{"internal", "unknown", "data_loss"} {
		if bytes.Contains(body, []byte(fmt.Sprintf(`"code":%q`, c))) {
			return c
		}
	}
	if resp.StatusCode >= 500 && !bytes.Contains(body, []byte(`"code":"deadline_exceeded"`)) {
		return resp.Status
	}
	return ""
}
