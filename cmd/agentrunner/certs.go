package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	"github.com/agentrunner/agentrunner/server/auth/devcerts"
)

// certsCommand runs `agentrunner certs`; args are the arguments after "certs".
func certsCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentrunner certs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "certs", "`directory` to write the certificates and keys into")
	hosts := fs.String("hosts", "localhost,127.0.0.1", "comma-separated DNS names and IPs of the server certificate")
	clients := fs.String("clients", "", "comma-separated common names of client certificates to make (mTLS identities)")
	valid := fs.Duration("valid", 365*24*time.Hour, "how long the certificates are valid")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: agentrunner certs [--dir DIR] [--hosts H,...] [--clients NAME,...]\n\n"+
			"Makes a private CA (ca.pem, ca.key), a server certificate (server.pem,\n"+
			"server.key) and client certificates (client-NAME.pem, client-NAME.key)\n"+
			"for trying TLS and mTLS. Use your own CA in production.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	rest, err := cliflags.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("certs takes no arguments, got %q", rest)
	}
	o := devcerts.Options{Dir: *dir, Hosts: split(*hosts), Clients: split(*clients), Valid: *valid}
	if err := devcerts.Generate(o); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote ca.pem, server.pem (%s)", strings.Join(o.Hosts, ", "))
	for _, c := range o.Clients {
		fmt.Fprintf(stdout, ", client-%s.pem", c)
	}
	fmt.Fprintf(stdout, " and their keys to %s\n", *dir)
	return nil
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
