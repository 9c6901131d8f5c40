package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/clientconn"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

const healthUsage = `Usage:
  agentrunner health [--addr HOST:PORT] [--service NAME] [--timeout D] [TLS flags]

Asks the server's gRPC health service (grpc.health.v1.Health/Check) and
exits 0 when it answers SERVING, 1 otherwise: a container's or a probe's
health check that needs nothing but the binary. Health checks need no
token, even with an auth file.

Flags:
`

// healthCommand runs `agentrunner health`.
func healthCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		addr, service string
		timeout       time.Duration
		conn          clientconn.Flags
	)
	fs := flag.NewFlagSet("agentrunner health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, healthUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&addr, "addr", clientAddr(), "server address (env "+envAddr+")")
	fs.StringVar(&service, "service", "", "the service to ask about; empty is the server as a whole")
	fs.DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answer")
	conn.Register(fs)
	positional, err := cliflags.Parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return err
	case err != nil:
		return usagef("health: %v", err)
	case len(positional) > 0:
		return usagef("health takes no arguments, got %q", positional)
	}
	cc, err := conn.Dial(addr)
	if err != nil {
		return err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return describeRPC(err)
	}
	fmt.Fprintln(stdout, resp.GetStatus())
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health: %s is %s", addr, resp.GetStatus())
	}
	return nil
}
