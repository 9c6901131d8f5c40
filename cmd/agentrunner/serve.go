package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/server"
	a2aserve "github.com/agentrunner/agentrunner/server/a2a"
	"github.com/agentrunner/agentrunner/server/admin"
	"github.com/agentrunner/agentrunner/server/console"
	"github.com/agentrunner/agentrunner/server/web"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"github.com/agentrunner/agentrunner/store/pgstore"
	bolterrors "go.etcd.io/bbolt/errors"
	"google.golang.org/grpc"
)

// Environment variables that stand in for serve's flags. The names are a
// contract: docs and deployment scripts use them.
const (
	envAddr   = "AGENTRUNNER_ADDR"
	envData   = "AGENTRUNNER_DATA"
	envConfig = "AGENTRUNNER_CONFIG"
	// envLogLevel sets --log-level.
	envLogLevel    = "AGENTRUNNER_LOG_LEVEL"
	envMetricsAddr = "AGENTRUNNER_METRICS_ADDR"
	envHTTPAddr    = "AGENTRUNNER_HTTP_ADDR"
	envHTTPPrefix  = "AGENTRUNNER_HTTP_PREFIX"
)

const (
	defaultAddr = "127.0.0.1:50051"
	// defaultHTTPAddr serves the console to the machine's own browser,
	// and to no one else, unless asked.
	defaultHTTPAddr = "127.0.0.1:8080"
	// defaultData is relative to the working directory, so that the first
	// command of the README keeps its data next to the checkout, where the
	// user can see and delete it.
	defaultData = "agentrunner.db"
)

const serveUsage = `Usage: agentrunner serve [flags]

Serves SessionService, ArtifactService and RunnerService over gRPC, with
health checking and reflection, storing sessions, events and artifacts in a
bbolt file, or in PostgreSQL when --data is a postgres:// URL. A second
listener, --http-addr, serves the same API over Connect, gRPC-Web and gRPC
(h2c) and the web console; "" turns it off. Flags fall
back to environment variables; a flag on the command line wins. SIGINT or
SIGTERM shuts down gracefully: health turns NOT_SERVING, in-flight calls get
--shutdown-grace to finish, and the store is closed last.

Without --auth-file anyone who reaches the port may do anything, so serve
refuses a non-loopback --addr or --http-addr unless --insecure-no-auth. With it, every call
but health checks needs a bearer token or a client certificate the file
names (docs/security.md).

Flags:
`

// serveFlags are the settings of serve.
type serveFlags struct {
	addr, data, config string
	maxRun, grace      time.Duration
	drain              time.Duration
	logLevel           slog.Level
	debugAddr          string
	metricsAddr        string
	sec                securityFlags
	limits             server.Limits
	maxRequest         int
	// leaseTTL and replica configure the session leases on a shared
	// store (see runner.Config).
	leaseTTL time.Duration
	replica  string
	// httpAddr ("" for none) and httpPrefix (CleanPrefix'd) place the
	// HTTP listener of the console.
	httpAddr, httpPrefix string
	// web bounds the HTTP listener's clients (timeouts, connections,
	// the hosts a server without auth answers).
	web webFlags
	// a2a serves every app as an A2A agent; false serves none.
	a2a bool
	// publicURL, publicGRPC and trustedProxies say where clients reach
	// the listeners, for the agent cards.
	publicURL, publicGRPC string
	trustedProxies        []netip.Prefix
	// webhooks configure the runs' call backs, hooks holds what they
	// configure (webhooks.go).
	webhooks webhookFlags
	hooks    *webhooks
}

// webFlags are the HTTP listener's bounds on its clients.
type webFlags struct {
	bodyTimeout, headerTimeout, idleTimeout time.Duration
	maxConns                                int
	allowedHosts                            string
}

func parseServeFlags(args []string, stderr io.Writer) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("agentrunner serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), serveUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.addr, "addr", defaultAddr, "`host:port` to listen on; port 0 picks a free port (env "+envAddr+")")
	fs.StringVar(&f.data, "data", defaultData, dataUsage)
	fs.StringVar(&f.httpAddr, "http-addr", defaultHTTPAddr, "`host:port` serving the web console and the API over Connect, gRPC-Web and gRPC (h2c, or HTTPS with --tls-cert); \"\" turns it off; port 0 picks a free port (env "+envHTTPAddr+")")
	fs.StringVar(&f.httpPrefix, "http-prefix", "", "URL `path` under which --http-addr serves everything, such as /agentrunner behind a reverse proxy (env "+envHTTPPrefix+")")
	webFlagsInto(fs, &f)
	webhookFlagsInto(fs, &f.webhooks)
	fs.StringVar(&f.config, "config", "", "apps `file` (YAML or JSON, schema agentrunner.v1.AppsConfig); without one the default apps are served: "+strings.Join(defaultAppNames(), ", ")+" (env "+envConfig+")")
	fs.DurationVar(&f.maxRun, "max-run", 15*time.Minute, "longest a single Run may take (its deadline); 0 means no limit")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", runner.DefaultLeaseTTL, "on PostgreSQL: how long a session lease lasts without a heartbeat, so how soon the runs of a replica that died are marked interrupted")
	fs.StringVar(&f.replica, "replica", "", "on PostgreSQL: this replica's name in session leases (and busy-session errors); default host name and process id")
	fs.IntVar(&f.limits.MaxPageSize, "max-page-size", store.MaxPageSize, "largest page_size a listing accepts (at most 1000); above is InvalidArgument")
	fs.IntVar(&f.limits.MaxEventsPerCall, "max-events-per-call", server.DefaultMaxEventsPerCall, "most events GetSession returns (the most recent; omitted_events counts the rest)")
	fs.IntVar(&f.limits.MaxRuns, "max-runs", server.DefaultMaxRuns, "runs in progress at once on this server; one more is ResourceExhausted")
	fs.IntVar(&f.limits.MaxRunsPerPrincipal, "max-runs-per-principal", server.DefaultMaxRunsPerPrincipal, "runs in progress at once per principal of --auth-file; one more is ResourceExhausted")
	fs.IntVar(&f.maxRequest, "max-request-bytes", server.DefaultMaxMessageBytes, "largest request message, at most this default; gRPC refuses a larger one with ResourceExhausted (responses may still be this default)")
	fs.IntVar(&f.limits.MaxParts, "max-parts", server.DefaultMaxParts, "most parts in one content (a run's message, an appended event, a resume's answers); more is InvalidArgument")
	fs.IntVar(&f.limits.MaxInlineBytes, "max-inline-bytes", server.DefaultMaxInlineBytes, "most bytes of one inline_data part of such a content; more is InvalidArgument")
	fs.IntVar(&f.limits.MaxArtifactBytes, "max-artifact-bytes", server.MaxItemBytes(server.DefaultMaxMessageBytes), "most bytes of one artifact version (at most this default, what one message holds); more is InvalidArgument")
	fs.DurationVar(&f.grace, "shutdown-grace", 10*time.Second, "how long in-flight calls may finish at shutdown before they are cancelled")
	fs.DurationVar(&f.drain, "drain-timeout", 30*time.Second, "at shutdown, how long runs in progress may finish before they are stopped and marked RUN_STATUS_INTERRUPTED (ResumeRun continues them after a restart)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "`host:port` serving Prometheus metrics at /metrics (off when empty; env "+envMetricsAddr+")")
	fs.StringVar(&f.debugAddr, "debug-addr", "", "`host:port` for a debug HTTP server with /debug/pprof (off when empty; keep it on loopback)")
	fs.StringVar(&f.sec.authFile, "auth-file", "", "principals `file` (YAML: tokens' SHA-256 or mTLS identities, apps, users, admin); every call but health checks then needs one (env "+envAuthFile+")")
	fs.StringVar(&f.sec.tlsCert, "tls-cert", "", "serve TLS with this PEM certificate `file` (chain), with --tls-key")
	fs.StringVar(&f.sec.tlsKey, "tls-key", "", "PEM private key `file` of --tls-cert")
	fs.StringVar(&f.sec.clientCA, "client-ca", "", "PEM CA `file` that verifies client certificates (mTLS; the auth file's mtls_identity names them)")
	fs.BoolVar(&f.sec.insecureNoAuthOK, "insecure-no-auth", false, "serve a non-loopback address without --auth-file: anyone who reaches the port may do anything")
	fs.TextVar(&f.logLevel, "log-level", slog.LevelInfo, "`level` of the log: debug (every RPC), info, warn or error (env "+envLogLevel+")")
	rest, err := cliflags.Parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return f, err
		}
		return f, usageError{err.Error()}
	}
	if len(rest) > 0 {
		return f, usagef("serve takes no arguments, got %q", rest)
	}
	if err := f.sec.check(); err != nil {
		return f, err
	}
	if l := f.limits; l.MaxPageSize < 1 || l.MaxPageSize > store.MaxPageSize || l.MaxEventsPerCall < 1 || l.MaxRuns < 1 || l.MaxRunsPerPrincipal < 1 {
		return f, usagef("--max-page-size (1 to %d), --max-events-per-call, --max-runs and --max-runs-per-principal must be positive", store.MaxPageSize)
	}
	if f.maxRequest < 1 || f.maxRequest > server.DefaultMaxMessageBytes {
		return f, usagef("--max-request-bytes must be from 1 to %d", server.DefaultMaxMessageBytes)
	}
	if l := f.limits; l.MaxParts < 1 || l.MaxInlineBytes < 1 || l.MaxArtifactBytes < 1 || l.MaxArtifactBytes > server.MaxItemBytes(server.DefaultMaxMessageBytes) {
		return f, usagef("--max-parts, --max-inline-bytes and --max-artifact-bytes must be positive, --max-artifact-bytes at most %d", server.MaxItemBytes(server.DefaultMaxMessageBytes))
	}
	if f.leaseTTL <= 0 {
		return f, usagef("--lease-ttl must be positive")
	}
	// Environment fallbacks, for the flags not given on the command line.
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for name, env := range map[string]string{"addr": envAddr, "data": envData, "config": envConfig, "log-level": envLogLevel, "metrics-addr": envMetricsAddr, "auth-file": envAuthFile, "http-addr": envHTTPAddr, "http-prefix": envHTTPPrefix, "webhook-allow-hosts": envWebhookAllowHosts} {
		if v := os.Getenv(env); v != "" && !set[name] {
			if err := fs.Set(name, v); err != nil {
				return f, usagef("%s: %v", env, err)
			}
		}
	}
	// Checked after the environment, which may have set it.
	if f.httpPrefix, err = web.CleanPrefix(f.httpPrefix); err != nil {
		return f, usagef("--http-prefix: %v", err)
	}
	f.hooks, err = newWebhooks(f.webhooks)
	return f, err
}

// webFlagsInto defines the HTTP listener's bounds on its clients and
// what the agent cards say of where clients reach the server.
func webFlagsInto(fs *flag.FlagSet, f *serveFlags) {
	fs.DurationVar(&f.web.bodyTimeout, "http-body-timeout", 30*time.Second, "on --http-addr: longest a client may take to send a request's body once its headers are in (a slow or stalled body is cut); 0 means no bound")
	fs.DurationVar(&f.web.headerTimeout, "http-header-timeout", 10*time.Second, "on --http-addr: longest a client may take to send a request's headers")
	fs.DurationVar(&f.web.idleTimeout, "http-idle-timeout", 2*time.Minute, "on --http-addr: how long a keep-alive connection may sit idle before it is closed")
	fs.IntVar(&f.web.maxConns, "http-max-conns", 4096, "on --http-addr: most connections open at once (more wait to be accepted); 0 means no cap")
	fs.StringVar(&f.web.allowedHosts, "http-allowed-hosts", "", "comma-separated host names a --http-addr without --auth-file answers besides localhost and loopback addresses (a reverse proxy's name): any other Host is refused, against DNS rebinding")
	fs.Func("public-url", "`URL` clients reach --http-addr's root at (prefix included), such as https://agents.example.com/ai: the agent cards' URLs are built on it instead of each request's Host", func(v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("%q must be an absolute http or https URL without query", v)
		}
		f.publicURL = v
		return nil
	})
	fs.StringVar(&f.publicGRPC, "public-grpc-addr", "", "`host:port` clients reach --addr at, for the agent cards' gRPC interface")
	fs.Func("trusted-proxies", "comma-separated `addresses or CIDRs` of reverse proxies whose Forwarded or X-Forwarded-Host/-Proto headers name the host an agent card points to (from anyone else they are ignored)", func(v string) error {
		p, err := parsePrefixes(v)
		f.trustedProxies = append(f.trustedProxies, p...)
		return err
	})
	fs.BoolVar(&f.a2a, "a2a", true, "serve every app as an A2A agent (its gRPC binding, and its HTTP bindings and agent card under /a2a/); --a2a=false serves none")
}

// parsePrefixes reads comma-separated addresses or CIDRs.
func parsePrefixes(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not an address or a CIDR", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p)
	}
	return out, nil
}

// serve runs the service until ctx is cancelled or a signal arrives.
func serve(ctx context.Context, args []string, stderr io.Writer) (err error) {
	f, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: f.logLevel}))

	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	sec, err := loadSecurity(f.sec)
	if err != nil {
		return err
	}

	if err := makeDataDir(f.data); err != nil {
		return err
	}
	tr, err := setupTelemetry(ctx, log, f.metricsAddr, f.data)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, f.data, log, tr.onCommit)
	if err != nil {
		_ = tr.shutdown(context.WithoutCancel(ctx))
		return err
	}
	// Deferred first, so it runs last: after the gRPC server has stopped
	// and no handler can touch the store.
	defer func() {
		if cerr := st.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close data file: %w", cerr))
		}
	}()

	// Runs once the server has stopped (and before the store closes): the
	// spans and metrics of the last runs are flushed when no handler is
	// left.
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if terr := tr.shutdown(sctx); terr != nil {
			log.Warn("flushing traces", "err", terr)
		}
	}()
	apps, err := loadApps(ctx, f.config, st, leasing{ttl: f.leaseTTL, replica: f.replica}, f.hooks, log, tr.plugins...)
	if err != nil {
		return err
	}
	reloader := &appsReloader{path: f.config, reg: apps, log: log, hooks: f.hooks}
	defer watchHangups(ctx, reloader)()
	core, err := startRuns(ctx, f, st, apps, sec, log)
	if err != nil {
		return err
	}
	defer f.hooks.start(ctx, st, tr.onWebhook, log)() // stops after the servers, before the store closes
	defer startScheduler(ctx, core, f.replica, log)()
	if f.debugAddr != "" {
		stopDebug, err := serveDebug(f.debugAddr, log)
		if err != nil {
			return err
		}
		defer stopDebug()
	}
	sv, err := listenAndServe(f, core, reloader, sec, tr.options, log)
	if err != nil {
		return err
	}
	if err := untilStopped(ctx, sv); err != nil {
		return err
	}
	// A second Ctrl-C now kills the process the default way.
	stopSignals()
	return shutdown(ctx, sv, apps, f, log)
}

// watchHangups reads the apps file again on each SIGHUP, as
// AdminService.ReloadApps does, until ctx is done; the returned func
// stops the signal's delivery.
func watchHangups(ctx context.Context, r *appsReloader) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go r.watch(ctx, hup)
	return func() { signal.Stop(hup) }
}

// untilStopped serves until ctx is done (nil: shut down gracefully) or a
// listener fails (its error, with everything stopped at once: nothing is
// serving).
func untilStopped(ctx context.Context, sv *serving) error {
	select {
	case err := <-sv.served:
		sv.stopNow()
		return fmt.Errorf("serve: %w", err)
	case err := <-sv.webServed:
		sv.stopNow()
		return fmt.Errorf("serve --http-addr: %w", err)
	case <-ctx.Done():
		return nil
	}
}

// startRuns builds the server's core and recovers the runs a crash or a
// shutdown left (on a store that replicas share, each runner does so
// again every lease lifetime on its own, until drainRuns shuts it down).
// The core's claim gate goes on every app's runner first: recovered runs
// and runs taken from a shared queue count against --max-runs too.
func startRuns(ctx context.Context, f serveFlags, st store.Store, reg *apps.Registry, sec *security, log *slog.Logger) (*server.Server, error) {
	core := server.New(server.Config{
		Store:           st,
		Apps:            server.RunnerApps(reg),
		Logger:          log,
		MaxRunDuration:  f.maxRun,
		Auth:            sec.auth,
		Limits:          f.limits,
		MaxRequestBytes: f.maxRequest,
		WebhookURL:      f.hooks.urlCheck(),
		JudgeModels:     judgeModels(f.config, log),
	})
	gateClaims(reg, core.ClaimGate())
	if err := recoverRuns(ctx, reg, log); err != nil {
		return nil, err
	}
	return core, nil
}

// makeDataDir creates the directory of a bbolt --data file; a
// PostgreSQL URL has none.
func makeDataDir(data string) error {
	if dir := filepath.Dir(data); dir != "." && !pgstore.IsURL(data) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create data directory: %w", err)
		}
	}
	return nil
}

// dataUsage describes --data, for serve and migrate.
const dataUsage = "bbolt data `file`, created if missing, relative to the working directory; or a PostgreSQL URL, postgres://user:password@host:port/db?pool_max_conns=N&connect_timeout=S (env " + envData + ")"

// openStore opens the store --data names: PostgreSQL for a postgres://
// URL (pool size and timeouts from the URL, migrations applied), else the
// bbolt file, saying so when another server holds it.
func openStore(ctx context.Context, path string, log *slog.Logger, onCommit func(time.Duration, int)) (store.Store, error) {
	// Every item the store keeps fits, alone, in one response message.
	maxItem := server.MaxItemBytes(server.DefaultMaxMessageBytes)
	if pgstore.IsURL(path) {
		st, err := pgstore.Open(ctx, path, pgstore.Options{Logger: log, OnCommit: onCommit, MaxItemBytes: maxItem})
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL store %s: %w", redactData(path), err)
		}
		return st, nil
	}
	st, err := boltstore.Open(path, boltstore.Options{Logger: log, OnCommit: onCommit, MaxItemBytes: maxItem})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open data file: %w (is another agentrunner serving from %s?)", err, path)
	} else if err != nil {
		return nil, fmt.Errorf("open data file: %w", err)
	}
	return st, nil
}

// shutdown drains the runs (health NOT_SERVING, new runs refused, runs in
// progress get f.drain to end), then stops the servers gracefully within
// f.grace (then cancels what is left), waits for them, and closes what
// the apps hold. The HTTP server goes first: the gRPC server's graceful
// stop would cut off the streams it serves (web.Server.Shutdown).
func shutdown(ctx context.Context, sv *serving, apps *apps.Registry, f serveFlags, log *slog.Logger) error {
	log.Info("shutting down", "drain", f.drain, "grace", f.grace)
	sv.grpc.NotServing()
	drainRuns(context.WithoutCancel(ctx), apps, f.drain, log)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.grace)
	defer cancel()
	var webErr error
	if sv.web != nil {
		if err := sv.web.Shutdown(sctx); err != nil {
			log.Warn("grace period over; closed the HTTP connections still open", "err", err)
		}
		webErr = <-sv.webServed
	}
	if err := sv.grpc.Shutdown(sctx); err != nil {
		log.Warn("grace period over; cancelled the calls still in flight", "err", err)
	}
	if err := errors.Join(<-sv.served, webErr); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// No run is left: the plugins can let go of what they hold.
	if err := apps.Close(context.WithoutCancel(ctx)); err != nil {
		log.Warn("closing plugins", "err", err)
	}
	log.Info("stopped")
	return nil
}

// serveDebug serves the pprof handlers on addr, on their own mux so that
// nothing else is exposed there.
func serveDebug(addr string, log *slog.Logger) (stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("debug listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(lis) }()
	log.Info("debug server", "addr", lis.Addr().String())
	return func() { _ = hs.Close() }, nil
}

// serving is what listenAndServe started: the gRPC server and, unless
// --http-addr is "", the HTTP one, each with the channel its Serve
// returns on (nil for no HTTP server, which a select never picks).
type serving struct {
	grpc      *server.GRPCServer
	served    <-chan error
	web       *web.Server
	webServed <-chan error
}

// stopNow stops both servers without grace: one of them failed.
func (sv *serving) stopNow() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if sv.web != nil {
		_ = sv.web.Shutdown(ctx)
	}
	_ = sv.grpc.Shutdown(ctx)
}

// listenAndServe starts the gRPC server on f.addr and the HTTP one on
// f.httpAddr, and logs the bound addresses: with port 0 that line is how
// callers (and tests) learn them. Both listen before either serves, so
// that a busy port fails the start, not half of it.
func listenAndServe(f serveFlags, core *server.Server, rl *appsReloader, sec *security, opts []grpc.ServerOption, log *slog.Logger) (*serving, error) {
	lis, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if err := checkExposure(lis, "--addr", sec, f.sec.insecureNoAuthOK, log); err != nil {
		lis.Close()
		return nil, err
	}
	srv := server.NewGRPCServer(core, append(slices.Clone(sec.options), opts...)...)
	// The operator's RPCs (AdminService.Backup, ReloadApps): admins only,
	// by the server's access table (no rule there refuses everyone else);
	// package admin knows nothing of the server.
	admin.New(core.Store(), log).WithReloader(rl).Register(srv.GRPC())
	// Every app is an A2A agent too: the gRPC binding on the same
	// grpc.Server (same interceptors), the HTTP ones beside the console.
	var a2aHTTP http.Handler
	if f.a2a {
		agents := a2aserve.New(core.Desk(), log)
		a2agrpc.NewHandler(agents).RegisterWith(srv.GRPC())
		a2aHTTP = agents.HTTP(a2aserve.HTTPConfig{
			Prefix: f.httpPrefix, GRPCAddr: lis.Addr().String(), TLS: sec.tls, MTLS: sec.mtls, Auth: sec.auth,
			MaxRequestBytes: srv.MaxRequestBytes(), Version: buildVersion(),
			PublicURL: strings.TrimSuffix(f.publicURL, "/"), PublicGRPCAddr: f.publicGRPC, TrustedProxies: f.trustedProxies,
		})
	}
	ws, wlis, err := listenWeb(f, srv, a2aHTTP, sec, log)
	if err != nil {
		lis.Close()
		return nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	sv := &serving{grpc: srv, served: served}
	consoleURL := "off"
	if ws != nil {
		webServed := make(chan error, 1)
		go func() { webServed <- ws.Serve(wlis) }()
		sv.web, sv.webServed = ws, webServed
		consoleURL = web.URL(wlis.Addr(), sec.tls, f.httpPrefix)
	}
	var names []string
	for _, a := range rl.reg.List() {
		names = append(names, a.GetName())
	}
	log.Info("serving", "addr", lis.Addr().String(), "console", consoleURL, "data", redactData(f.data), "apps", strings.Join(names, ","),
		"tls", sec.tls, "mtls", sec.mtls, "auth", sec.auth != nil)
	return sv, nil
}

// listenWeb listens on f.httpAddr, under the same exposure rule as
// --addr, and returns the HTTP server of srv's services and the console
// for it; nil, nil when --http-addr is "".
func listenWeb(f serveFlags, srv *server.GRPCServer, a2aHTTP http.Handler, sec *security, log *slog.Logger) (*web.Server, net.Listener, error) {
	if f.httpAddr == "" {
		return nil, nil, nil
	}
	lis, err := net.Listen("tcp", f.httpAddr)
	if errors.Is(err, syscall.EADDRINUSE) {
		// The default port is a common one: say how to get past it.
		return nil, nil, fmt.Errorf("listen --http-addr %s (the web console): %w; give --http-addr another host:port (port 0 picks a free one), or --http-addr \"\" to serve no console (env %s)", f.httpAddr, err, envHTTPAddr)
	} else if err != nil {
		return nil, nil, fmt.Errorf("listen --http-addr %s: %w", f.httpAddr, err)
	}
	if err := checkExposure(lis, "--http-addr", sec, f.sec.insecureNoAuthOK, log); err != nil {
		lis.Close()
		return nil, nil, err
	}
	var allowed []string
	for _, h := range strings.Split(f.web.allowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			allowed = append(allowed, h)
		}
	}
	ws, err := web.New(web.Config{
		GRPC:            srv.GRPC(),
		MaxMessageBytes: srv.MaxMessageBytes(),
		// Credentials are checked before a request's body is read.
		Authenticate: srv.AuthenticateHTTP(),
		Prefix:       f.httpPrefix,
		Console:      console.FS(),
		A2A:          a2aHTTP,
		TLS:          sec.tlsConfig,
		Logger:       log,
		// Without authentication a loopback listener answers only
		// loopback hosts (and --http-allowed-hosts), --insecure-no-auth
		// or not: a page whose domain resolves to 127.0.0.1 is no
		// caller. A listener beyond loopback without authentication
		// (--insecure-no-auth) checks hosts when some are named.
		LoopbackHosts:     sec.auth == nil && (isLoopback(lis) || len(allowed) > 0),
		AllowedHosts:      allowed,
		MaxRequestBytes:   srv.MaxRequestBytes(),
		BodyTimeout:       f.web.bodyTimeout,
		ReadHeaderTimeout: f.web.headerTimeout,
		IdleTimeout:       f.web.idleTimeout,
		MaxConns:          f.web.maxConns,
	})
	if err != nil {
		lis.Close()
		return nil, nil, err
	}
	return ws, lis, nil
}

// redactData returns --data as it may be logged or printed: a URL
// without its password, whether in its user part or given as a password
// or sslpassword parameter.
func redactData(data string) string {
	if !pgstore.IsURL(data) {
		return data
	}
	u, err := url.Parse(data)
	if err != nil {
		return "postgres://…" // unparsable: show nothing of it
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
			q.Set(k, "xxxxx")
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}
