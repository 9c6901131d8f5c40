// Command agentrunner runs AI agents inside persistent conversation
// sessions and serves them over gRPC.
//
//	agentrunner serve                  # the service, on 127.0.0.1:50051
//	agentrunner chat                   # talk to an app from the terminal
//	agentrunner sessions list|show|delete|fork|rewind
//	agentrunner runs list|get|cancel|attach|resume
//	agentrunner usage --app APP        tokens and cost by day and model
//	agentrunner bench                  # load benchmark
//	agentrunner migrate                # apply the store's migrations
//	agentrunner backup|restore         # online backup of a bbolt store, restore
//	agentrunner migrate-store          # copy a store into another (bbolt, PostgreSQL)
//	agentrunner health                 # the gRPC health check, for containers
//
// Run `agentrunner help` or `agentrunner <command> -h` for the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/bench"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/chat"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/mcpdemo"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode reports err and turns it into the process's exit status: 0 for
// success and for -h, 2 for a command line that cannot work, 1 otherwise.
func exitCode(err error, stderr io.Writer) int {
	var usage usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage), errors.Is(err, chat.ErrUsage):
		fmt.Fprintf(stderr, "agentrunner: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "agentrunner: %v\n", err)
		return 1
	}
}

// usageError is a command line that cannot work as given.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

const usage = `agentrunner runs AI agents inside persistent conversation sessions and
serves them over gRPC.

Usage:
  agentrunner serve [flags]                 run the gRPC service
  agentrunner chat [flags]                  talk to an app from the terminal
  agentrunner sessions list|show|delete|fork|rewind
                                            inspect stored sessions, fork one, rewind one
  agentrunner runs list|get|cancel|attach|resume
                                            inspect, follow, cancel and resume runs
  agentrunner usage --app APP [--user U] [--from D] [--to D]
                                            tokens and cost by UTC day and model
  agentrunner schedules list|get|create|delete
                                            runs at cron times, with their last and next firing
  agentrunner bench [flags]                 load benchmark of a local server
  agentrunner eval FILE [flags]             evaluate an app against ADK eval files (also list, show,
                                            compare, save-session)
  agentrunner migrate [flags]               apply the store's migrations (bbolt file or PostgreSQL) and exit
  agentrunner backup --out FILE [flags]     a checked copy of a running (or stopped) bbolt store
  agentrunner reload [--addr HOST:PORT]     the running server reads its apps file again (as on SIGHUP)
  agentrunner restore --from FILE --data PATH
                                            put a backup in place for a stopped server
  agentrunner migrate-store --from S --to S copy every record between stores (bolt:PATH, postgres://...)
  agentrunner health [--addr HOST:PORT]     exit 0 when the server's health check says SERVING
  agentrunner certs [flags]                 a private CA, server and client certificates to try TLS and mTLS
  agentrunner mcp-demo                      an example MCP server on stdio (the default apps use it)
  agentrunner version                       version, commit and build time (also --version)
  agentrunner help [command]                this text, or a command's flags

Run "agentrunner <command> -h" for a command's flags.
`

// run is main without the process: tests call it directly. args exclude the
// program name. It returns when the command is done; for serve, when ctx is
// cancelled or a SIGINT/SIGTERM arrives and the server has shut down.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usagef("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return serve(ctx, rest, stderr)
	case "chat":
		return chat.Main(ctx, rest, stdin, stdout, stderr)
	case "sessions":
		return chat.Sessions(ctx, rest, stdout, stderr)
	case "runs":
		return runsCommand(ctx, rest, stdout, stderr)
	case "usage":
		return usageCommand(ctx, rest, stdout, stderr)
	case "schedules":
		return schedulesCommand(ctx, rest, stdout, stderr)
	case "bench":
		return bench.Main(ctx, rest, stdout, stderr)
	case "eval":
		return evalCommand(ctx, rest, stdout, stderr)
	case "migrate":
		return migrateCommand(ctx, rest, stdout, stderr)
	case "backup":
		return backupCommand(ctx, rest, stdout, stderr)
	case "reload":
		return reloadCommand(ctx, rest, stdout, stderr)
	case "restore":
		return restoreCommand(ctx, rest, stdout, stderr)
	case "migrate-store":
		return migrateStoreCommand(ctx, rest, stdout, stderr)
	case "health":
		return healthCommand(ctx, rest, stdout, stderr)
	case "certs":
		return certsCommand(rest, stdout, stderr)
	case "mcp-demo":
		return mcpdemo.Main(ctx, rest, stderr)
	case "version", "--version", "-version":
		return printVersion(stdout)
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 && rest[0] != "help" {
			return run(ctx, []string{rest[0], "-h"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usagef("unknown command %q", cmd)
}
