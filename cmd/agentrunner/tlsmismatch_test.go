package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/clientconn"
)

// TestTLSMismatchSaysSo checks that a client and a server that disagree
// on TLS are told so, with the flag that fixes it, instead of being asked
// whether the server runs; and that a server that is down still is.
func TestTLSMismatchSaysSo(t *testing.T) {
	tlsAddr, dir := secureServer(t)
	plainAddr, _, _ := runsServer(t, filepath.Join(t.TempDir(), "data.db"), "")
	ca := filepath.Join(dir, "ca.pem")
	// A port nothing listens on: bound, then closed.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := lis.Addr().String()
	lis.Close()

	tests := []struct {
		name      string
		args      []string
		want, not string
	}{
		{"runs in plaintext to TLS", []string{"runs", "list", "--addr", tlsAddr, "--session", "s"}, clientconn.ServerSpeaksTLS + ": pass --ca-file", "is `agentrunner serve` running"},
		{"sessions in plaintext to TLS", []string{"sessions", "list", "--addr", tlsAddr}, clientconn.ServerSpeaksTLS + ": pass --ca-file", "is `agentrunner serve` running"},
		{"runs over TLS to plaintext", []string{"runs", "get", "e-X", "--addr", plainAddr, "--ca-file", ca}, clientconn.ServerSpeaksPlaintext + ": leave out --ca-file", "is `agentrunner serve` running"},
		{"sessions over TLS to plaintext", []string{"sessions", "list", "--addr", plainAddr, "--tls"}, clientconn.ServerSpeaksPlaintext, "is `agentrunner serve` running"},
		{"plaintext to nothing", []string{"runs", "get", "e-X", "--addr", downAddr}, "is `agentrunner serve` running", "TLS"},
		{"TLS to nothing", []string{"runs", "get", "e-X", "--addr", downAddr, "--ca-file", ca}, "is `agentrunner serve` running", "speaks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, code := cli(t, "", tc.args...)
			if code != 1 || !strings.Contains(out, tc.want) || strings.Contains(out, tc.not) {
				t.Errorf("%q: exit %d\n%s\nwant exit 1 with %q and without %q", tc.args, code, out, tc.want, tc.not)
			}
		})
	}
}
