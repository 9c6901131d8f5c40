package front

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/server/auth"
	"google.golang.org/grpc/codes"
)

// The desk's guards: who calls (authentication and the grants a call
// needs) and how much it may take (contents, pages, runs in progress).
// The rules they apply are auth.go's and limits.go's.

// Auth returns the auth file's principals; nil when authentication is off.
func (d *Desk) Auth() *auth.Config { return d.authz.cfg }

// Admit authenticates the caller of a gRPC call of method and applies the
// method's rule, but for the request's part (see Scope). It returns the
// context carrying the principal; with authentication off, ctx.
func (d *Desk) Admit(ctx context.Context, method string) (context.Context, error) {
	if d.authz.cfg == nil {
		return ctx, nil
	}
	return d.authz.admit(ctx, method)
}

// Scope checks a request of an admitted call against the caller's grants
// (the app and user it names, the app: state it sets), before anything
// is looked up. With authentication off it allows everything.
func (d *Desk) Scope(ctx context.Context, method string, req any) error {
	if d.authz.cfg == nil {
		return nil
	}
	return d.authz.scope(ctx, method, req)
}

// AuthenticateHTTP authenticates a request of A2A's HTTP bindings (JSON-RPC,
// REST) as a gRPC call is: its Authorization bearer token, else its
// verified TLS client certificate. It returns the request's context
// carrying the principal; with authentication off, the request's context.
// A refusal is an Unauthenticated status, logged once.
func (d *Desk) AuthenticateHTTP(r *http.Request) (context.Context, error) {
	if d.authz.cfg == nil {
		return r.Context(), nil
	}
	p, reason := d.authz.identifyHTTP(r)
	if p == nil {
		return nil, d.authz.deny(r.Context(), codes.Unauthenticated, "", "A2A "+r.Method+" "+r.URL.Path, reason)
	}
	return context.WithValue(r.Context(), principalKey{}, p), nil
}

// AuthenticateRPC refuses an HTTP request for an RPC (its path) that needs
// credentials when it carries none that name a principal, before its body
// is read (server/web's Config.Authenticate). What the principal may do
// is decided once the call reaches the gRPC server (Admit, Scope). With
// authentication off it refuses nothing.
func (d *Desk) AuthenticateRPC(r *http.Request) error {
	if d.authz.cfg == nil || d.authz.rules[r.URL.Path] == AccessOpen {
		return nil
	}
	if p, reason := d.authz.identifyHTTP(r); p == nil {
		_ = d.authz.deny(r.Context(), codes.Unauthenticated, "", r.URL.Path, reason)
		return errors.New(reason)
	}
	return nil
}

// AuthorizeUser refuses (PermissionDenied, logged once) a caller that may
// not act as user on app, for a protocol whose requests name no user
// (A2A); with authentication off it allows everything.
func (d *Desk) AuthorizeUser(ctx context.Context, app, user string) error {
	p := principalFrom(ctx)
	if p == nil || p.MayUse(app, user) {
		return nil
	}
	return d.authz.deny(ctx, codes.PermissionDenied, p.Name, methodOf(ctx), "not granted user "+strconv.Quote(user)+" on app "+strconv.Quote(app))
}

// checkContentLimits refuses a content with more parts, or an inline
// part with more data, than the limits allow. The request's own
// validation has run: c's shape is sound.
func (d *Desk) checkContentLimits(field string, c *agentrunnerv1.Content) error {
	if n := len(c.GetParts()); n > d.limits.MaxParts {
		return invalid(field+".parts", "%d parts, more than the limit of %d", n, d.limits.MaxParts)
	}
	for i, p := range c.GetParts() {
		if n := len(p.GetInlineData().GetData()); n > d.limits.MaxInlineBytes {
			return invalid(fmt.Sprintf("%s.parts[%d].inline_data.data", field, i), "%d bytes, more than the limit of %d", n, d.limits.MaxInlineBytes)
		}
	}
	return nil
}

// checkArtifactLimit refuses an artifact version larger than the limit.
func (d *Desk) checkArtifactLimit(p *agentrunnerv1.Part) error {
	if n := len(p.GetInlineData().GetData()); n > d.limits.MaxArtifactBytes {
		return invalid("artifact.inline_data.data", "%d bytes, more than the limit of %d", n, d.limits.MaxArtifactBytes)
	}
	return nil
}

// checkPage refuses a page_size above the limit.
func (d *Desk) checkPage(r paged) error {
	if n := r.GetPageSize(); int(n) > d.limits.MaxPageSize {
		return invalid("page_size", "%d is above the limit of %d", n, d.limits.MaxPageSize)
	}
	return nil
}

// acquireRun reserves a run slot for the caller.
func (d *Desk) acquireRun(ctx context.Context) (*runSlot, error) {
	name := ""
	if p := principalFrom(ctx); p != nil {
		name = p.Name
	}
	return d.runs.acquire(name)
}

// ClaimGate counts, against the server's limit of runs in progress
// (Limits.MaxRuns), the runs an app's runner takes from the queue of a
// store that several replicas share (runner.ClaimGate): runs admitted
// elsewhere, or earlier, that run here. Without it such runs ran beside
// the limit. cmd/agentrunner sets it on every app's runner.
func (d *Desk) ClaimGate() runner.ClaimGate { return claimGate{d.runs} }

// RunsInProgress is how many runs the desk counts against Limits.MaxRuns
// now: those admitted here, and those claimed from a shared queue, that
// have not ended.
func (d *Desk) RunsInProgress() int { return d.runs.inProgress() }
