package devcerts

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
)

func TestGenerateVerifies(t *testing.T) {
	dir := t.TempDir()
	if err := Generate(Options{Dir: dir, Hosts: []string{"localhost", "127.0.0.1"}, Clients: []string{"carol"}}); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.pem holds no certificate")
	}
	load := func(name string) *x509.Certificate {
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	srv := load("server")
	for _, host := range []string{"localhost", "127.0.0.1"} {
		if _, err := srv.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("server certificate for %s: %v", host, err)
		}
	}
	if _, err := srv.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: roots}); err == nil {
		t.Error("server certificate verifies for example.com")
	}
	client := load("client-carol")
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil || client.Subject.CommonName != "carol" {
		t.Errorf("client certificate %q: %v", client.Subject.CommonName, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "client-carol.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("client key mode: %v %v", fi.Mode(), err)
	}
	if err := Generate(Options{Dir: dir}); err == nil {
		t.Error("Generate without hosts succeeded")
	}
}
