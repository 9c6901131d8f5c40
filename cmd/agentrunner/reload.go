package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"text/tabwriter"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/clientconn"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/runner/apps"
)

// appsReloader reads serve's apps file again and applies it: on SIGHUP
// and for AdminService.ReloadApps. One reload runs at a time, so that
// two of them cannot apply in the other order than they read.
type appsReloader struct {
	path string // the apps file; "" when serve hosts the default apps
	reg  *apps.Registry
	log  *slog.Logger
	// hooks checks the file's webhooks and keeps its apps' secrets.
	hooks *webhooks
	mu    sync.Mutex
}

// errNoAppsFile refuses a reload of the built-in default apps.
var errNoAppsFile = errors.New("serve was started without --config: the default apps have no file to read again")

// reload reads and builds the apps file as the start does (every error
// of the file, models and secrets checked) and applies it; an error
// changes nothing. Apps it adds recover their runs, as at the start.
func (l *appsReloader) reload(ctx context.Context) ([]apps.Change, error) {
	if l.path == "" {
		return nil, errNoAppsFile
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	served, err := buildApps(ctx, l.path, l.hooks, l.log)
	if err != nil {
		return nil, err
	}
	changes, err := l.reg.Reload(served)
	if err != nil {
		return nil, err
	}
	l.hooks.setApps(served)
	for _, c := range changes {
		l.log.Info("apps reloaded", "app", c.Name, "change", c.Kind.String(), "config_version", c.Version)
		if c.Kind == apps.Added {
			if err := recoverApp(ctx, l.reg, c.Name, l.log); err != nil {
				l.log.Warn("recover the runs of an added app", "app", c.Name, "err", err)
			}
		}
	}
	return changes, nil
}

// ReloadApps serves AdminService.ReloadApps (admin.Reloader).
func (l *appsReloader) ReloadApps(ctx context.Context) (*servicev1.ReloadAppsResponse, error) {
	changes, err := l.reload(ctx)
	switch {
	case errors.Is(err, errNoAppsFile):
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	case err != nil && ctx.Err() == nil:
		// The file's problems, all of them, one a line as the start
		// prints them; nothing was applied.
		return nil, status.Errorf(codes.InvalidArgument, "apps file refused, nothing changed:\n%v", err)
	case err != nil:
		return nil, err
	}
	kinds := map[apps.ChangeKind]servicev1.AppChange{
		apps.Added: servicev1.AppChange_APP_CHANGE_ADDED, apps.Changed: servicev1.AppChange_APP_CHANGE_CHANGED,
		apps.Unchanged: servicev1.AppChange_APP_CHANGE_UNCHANGED, apps.Removed: servicev1.AppChange_APP_CHANGE_REMOVED,
	}
	resp := &servicev1.ReloadAppsResponse{}
	for _, c := range changes {
		resp.Apps = append(resp.Apps, &servicev1.AppReload{Name: c.Name, Change: kinds[c.Kind], ConfigVersion: c.Version})
	}
	return resp, nil
}

// watch reloads on every signal from sig until ctx is done. A refused
// file is logged with every error, and the apps stay as they were.
func (l *appsReloader) watch(ctx context.Context, sig <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
		}
		l.log.Info("SIGHUP: reading the apps file again", "config", l.path)
		if _, err := l.reload(ctx); err != nil {
			l.log.Error("apps file refused; the apps stay as they were", "config", l.path, "err", err)
		}
	}
}

const reloadUsage = `Usage: agentrunner reload [--addr HOST:PORT] [auth and TLS flags]

Asks the running server to read its apps file again (AdminService.ReloadApps,
admins only; SIGHUP to the server does the same) and prints what changed,
app by app, with each app's config version. A file with errors changes
nothing: every error is printed and the command fails. New runs take the
new config at once; runs in flight, queued or waiting on their caller
finish on the one they started with (docs/operations.md).

Flags:
`

// reloadCommand runs `agentrunner reload`.
func reloadCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var addr string
	var conn clientconn.Flags
	fs := flag.NewFlagSet("agentrunner reload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, reloadUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&addr, "addr", clientAddr(), "address of the running server (env "+envAddr+")")
	conn.Register(fs)
	positional, err := cliflags.Parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return err
	case err != nil:
		return usagef("reload: %v", err)
	case len(positional) > 0:
		return usagef("reload takes no arguments, got %q", positional)
	}
	cc, err := conn.Dial(addr)
	if err != nil {
		return err
	}
	defer cc.Close()
	resp, err := servicev1.NewAdminServiceClient(cc).ReloadApps(ctx, &servicev1.ReloadAppsRequest{})
	if err != nil {
		return describeRPC(err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tCHANGE\tCONFIG VERSION")
	for _, a := range resp.GetApps() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", a.GetName(), changeName(a.GetChange()), a.GetConfigVersion())
	}
	return tw.Flush()
}

// changeName is an AppChange as the CLI prints it: "changed".
func changeName(c servicev1.AppChange) string {
	names := map[servicev1.AppChange]string{
		servicev1.AppChange_APP_CHANGE_ADDED: "added", servicev1.AppChange_APP_CHANGE_CHANGED: "changed",
		servicev1.AppChange_APP_CHANGE_UNCHANGED: "unchanged", servicev1.AppChange_APP_CHANGE_REMOVED: "removed",
	}
	if n, ok := names[c]; ok {
		return n
	}
	return c.String()
}
