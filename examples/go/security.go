package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// security is how the example authenticates: a bearer token, TLS, mTLS.
type security struct {
	tokenFile, caFile, certFile, keyFile string
}

func (s security) dialOptions() ([]grpc.DialOption, error) {
	creds := insecure.NewCredentials()
	if s.caFile != "" || s.certFile != "" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if s.caFile != "" {
			pem, err := os.ReadFile(s.caFile)
			if err != nil {
				return nil, err
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("%s: no PEM certificate", s.caFile)
			}
		}
		if s.certFile != "" {
			cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
			if err != nil {
				return nil, err
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		creds = credentials.NewTLS(tc)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	token := os.Getenv("AGENTRUNNER_TOKEN")
	if s.tokenFile != "" {
		b, err := os.ReadFile(s.tokenFile)
		if err != nil {
			return nil, err
		}
		token = strings.TrimRight(string(b), "\r\n")
		if token == "" {
			return nil, errors.New(s.tokenFile + " is empty")
		}
	}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(token)))
	}
	return opts, nil
}

// bearer sends "authorization: Bearer <token>" with every call.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity is false so that a server on loopback without
// TLS works too; over a network, use TLS (-ca-file).
func (bearer) RequireTransportSecurity() bool { return false }
