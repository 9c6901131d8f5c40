// Package clientconn holds the connection flags the command-line clients
// share (chat, sessions, runs): the server's address, a bearer token, and
// TLS or mTLS files, and turns them into gRPC dial options.
package clientconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Environment variables the flags fall back to.
const (
	EnvToken  = "AGENTRUNNER_TOKEN"
	EnvCAFile = "AGENTRUNNER_CA_FILE"
)

// MaxMessageBytes is the largest response a client takes: the server's
// limit (server.DefaultMaxMessageBytes), well above gRPC's 4 MiB default,
// so that a page or a session as large as the server sends is read.
const MaxMessageBytes = 32 << 20

// Flags are the security settings of a client connection.
type Flags struct {
	TokenFile string // file holding the bearer token; else env AGENTRUNNER_TOKEN
	CAFile    string // PEM CA of the server's certificate: TLS on
	CertFile  string // client certificate for mTLS (TLS on)
	KeyFile   string // its key
	TLS       bool   // TLS with the system's roots
}

// Register declares the flags on fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.TokenFile, "token-file", "", "`file` holding the bearer token (env "+EnvToken+" holds the token itself)")
	fs.StringVar(&f.CAFile, "ca-file", os.Getenv(EnvCAFile), "PEM CA `file` that signed the server's certificate; turns TLS on (env "+EnvCAFile+")")
	fs.StringVar(&f.CertFile, "cert-file", "", "PEM client certificate `file` for mTLS, with --key-file; turns TLS on")
	fs.StringVar(&f.KeyFile, "key-file", "", "PEM private key `file` of --cert-file")
	fs.BoolVar(&f.TLS, "tls", false, "use TLS, trusting the system's CAs (implied by --ca-file and --cert-file)")
}

// Token returns the bearer token: --token-file's contents without the
// trailing newline, else AGENTRUNNER_TOKEN; empty for none.
func (f *Flags) Token() (string, error) {
	if f.TokenFile == "" {
		return os.Getenv(EnvToken), nil
	}
	b, err := os.ReadFile(f.TokenFile)
	if err != nil {
		return "", fmt.Errorf("read --token-file: %w", err)
	}
	tok := strings.TrimRight(string(b), "\r\n")
	if tok == "" {
		return "", fmt.Errorf("--token-file %s is empty", f.TokenFile)
	}
	return tok, nil
}

// DialOptions are the options of a connection with these settings.
func (f *Flags) DialOptions() ([]grpc.DialOption, error) {
	creds, err := f.transport()
	if err != nil {
		return nil, err
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes)),
	}
	tok, err := f.Token()
	if err != nil {
		return nil, err
	}
	if tok != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(Bearer(tok)))
	}
	return opts, nil
}

// Dial connects to addr with these settings.
func (f *Flags) Dial(addr string) (*grpc.ClientConn, error) {
	opts, err := f.DialOptions()
	if err != nil {
		return nil, err
	}
	tlsOn := f.CAFile != "" || f.CertFile != "" || f.KeyFile != "" || f.TLS
	explain := mismatchExplainer(addr, tlsOn)
	opts = append(opts,
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, o ...grpc.CallOption) error {
			return explain(invoker(ctx, method, req, reply, cc, o...))
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, o ...grpc.CallOption) (grpc.ClientStream, error) {
			s, err := streamer(ctx, desc, cc, method, o...)
			return s, explain(err)
		}))
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	return conn, nil
}

func (f *Flags) transport() (credentials.TransportCredentials, error) {
	if f.CAFile == "" && f.CertFile == "" && f.KeyFile == "" && !f.TLS {
		return insecure.NewCredentials(), nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read --ca-file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", f.CAFile)
		}
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, fmt.Errorf("--cert-file and --key-file go together")
	}
	if f.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load --cert-file/--key-file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return credentials.NewTLS(tc), nil
}

// Bearer sends a token as "authorization: Bearer <token>" on every call.
// It goes over plaintext too, for a server on loopback without TLS; a
// server beyond loopback should have TLS (the server warns otherwise).
type Bearer string

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b Bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials.
func (Bearer) RequireTransportSecurity() bool { return false }

// What a client is told when it and the server disagree on TLS, in place
// of gRPC's "connection closed" or "first record does not look like a TLS
// handshake", which send people looking for a server that is running.
const (
	// ServerSpeaksTLS starts the message of a plaintext client's failed
	// call to a TLS server.
	ServerSpeaksTLS = "the server speaks TLS and this client does not"
	// ServerSpeaksPlaintext starts the message of a TLS client's failed
	// call to a plaintext server.
	ServerSpeaksPlaintext = "the server speaks plaintext, not TLS"
)

// IsTLSMismatch reports whether err is a call that failed because the
// client and the server disagree on TLS; its message says which flag fixes
// it.
func IsTLSMismatch(err error) bool {
	msg := status.Convert(err).Message()
	return strings.HasPrefix(msg, ServerSpeaksTLS) || strings.HasPrefix(msg, ServerSpeaksPlaintext)
}

// mismatchExplainer returns what turns an Unavailable error into one that
// says the client and the server disagree on TLS, when they do. A TLS
// client sees the plaintext server's bytes as a bad TLS record; a
// plaintext client sees only a closed connection, so a TLS handshake is
// tried once to tell a TLS server from one that is down.
func mismatchExplainer(addr string, tlsOn bool) func(error) error {
	var once sync.Once
	var speaksTLS bool
	return func(err error) error {
		st, ok := status.FromError(err)
		if err == nil || !ok || st.Code() != codes.Unavailable {
			return err
		}
		if tlsOn {
			if strings.Contains(st.Message(), "does not look like a TLS handshake") {
				return status.Errorf(codes.Unavailable, "%s: leave out --ca-file, --cert-file, --key-file and --tls (and unset %s), or serve with --tls-cert and --tls-key (%s)", ServerSpeaksPlaintext, EnvCAFile, st.Message())
			}
			return err
		}
		once.Do(func() { speaksTLS = probeTLS(addr) })
		if speaksTLS {
			return status.Errorf(codes.Unavailable, "%s: pass --ca-file FILE (the CA that signed the server's certificate; env %s) or --tls (a certificate the system trusts) (%s)", ServerSpeaksTLS, EnvCAFile, st.Message())
		}
		return err
	}
}

// probeTLS reports whether the server at addr answers a TLS handshake. The
// certificate is not checked: the probe only asks whether the server
// speaks TLS at all, and sends nothing over the connection. A TLS alert
// (a server that wants a client certificate) is TLS too.
func probeTLS(addr string) bool {
	d := &net.Dialer{Timeout: 3 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})
	if err != nil {
		// crypto/tls reports an alert the server sent as this OpError.
		var op *net.OpError
		return errors.As(err, &op) && op.Op == "remote error"
	}
	conn.Close()
	return true
}
