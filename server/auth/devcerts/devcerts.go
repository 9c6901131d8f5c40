// Package devcerts makes a private CA, a server certificate and client
// certificates for trying TLS and mTLS (`agentrunner certs`), for tests and
// for CI. A production deployment uses certificates from its own CA. It
// imports neither gRPC nor the server.
package devcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Options says what to make.
type Options struct {
	// Dir receives ca.pem, ca.key, server.pem, server.key and, per
	// client, client-NAME.pem and client-NAME.key.
	Dir string
	// Hosts are the server's names and IP addresses (its SANs).
	Hosts []string
	// Clients are the common names of the client certificates.
	Clients []string
	// Valid is how long the certificates are valid.
	Valid time.Duration
}

type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Generate writes the CA, the server's and the clients' certificates and
// keys into o.Dir (keys readable by the owner only).
func Generate(o Options) error {
	if len(o.Hosts) == 0 {
		return errors.New("devcerts: at least one server host is needed")
	}
	if o.Valid <= 0 {
		o.Valid = 365 * 24 * time.Hour
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return fmt.Errorf("devcerts: %w", err)
	}
	ca, err := issue(o, "ca", &x509.Certificate{
		Subject:               pkix.Name{CommonName: "agentrunner dev CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, nil)
	if err != nil {
		return err
	}
	srv := &x509.Certificate{
		Subject:     pkix.Name{CommonName: o.Hosts[0]},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range o.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			srv.IPAddresses = append(srv.IPAddresses, ip)
		} else {
			srv.DNSNames = append(srv.DNSNames, h)
		}
	}
	if _, err := issue(o, "server", srv, ca); err != nil {
		return err
	}
	for _, c := range o.Clients {
		if _, err := issue(o, "client-"+c, &x509.Certificate{
			Subject:     pkix.Name{CommonName: c},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}, ca); err != nil {
			return err
		}
	}
	return nil
}

// issue signs tmpl with by (self-signed when by is nil) and writes
// NAME.pem and NAME.key.
func issue(o Options, name string, tmpl *x509.Certificate, by *issuer) (*issuer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("devcerts: %s key: %w", name, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("devcerts: serial: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(o.Valid)
	parent, signer := tmpl, key
	if by != nil {
		parent, signer = by.cert, by.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("devcerts: %s certificate: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("devcerts: %s certificate: %w", name, err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("devcerts: %s key: %w", name, err)
	}
	if err := writePEM(filepath.Join(o.Dir, name+".pem"), "CERTIFICATE", der, 0o644); err != nil {
		return nil, err
	}
	if err := writePEM(filepath.Join(o.Dir, name+".key"), "PRIVATE KEY", kb, 0o600); err != nil {
		return nil, err
	}
	return &issuer{cert: cert, key: key}, nil
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		return fmt.Errorf("devcerts: %w", err)
	}
	return nil
}
