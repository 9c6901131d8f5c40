package apps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"google.golang.org/protobuf/proto"
)

// Version is the config version of app, an entry of cfg: the first 16
// hex digits of the SHA-256 of the entry and of the file's models (an app
// names its models there, and a fallback may name another), each in
// protobuf's deterministic encoding. It changes when what the app runs
// may have changed, and stays when only other apps did.
func Version(cfg *agentrunnerv1.AppsConfig, app *agentrunnerv1.AppConfig) string {
	h := sha256.New()
	opts := proto.MarshalOptions{Deterministic: true}
	for _, m := range append([]proto.Message{app}, modelsOf(cfg)...) {
		b, err := opts.Marshal(m)
		if err != nil {
			// A validated config always encodes; a version nobody else
			// has keeps the app from being taken as unchanged.
			b = []byte(err.Error())
		}
		// Length-prefixed, so that no two sequences hash alike.
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func modelsOf(cfg *agentrunnerv1.AppsConfig) []proto.Message {
	out := make([]proto.Message, 0, len(cfg.GetModels()))
	for _, m := range cfg.GetModels() {
		out = append(out, m)
	}
	return out
}

// Change is what Reload did to one app.
type Change struct {
	Name    string
	Kind    ChangeKind
	Version string // the app's config version now (a removed app's last)
}

// ChangeKind says what Reload did to an app.
type ChangeKind int

// What Reload does to each app.
const (
	Added     ChangeKind = iota + 1 // new: served from now on
	Changed                         // new runs take the new config
	Unchanged                       // same version: nothing done
	Removed                         // new runs refused; runs in flight finish
)

func (k ChangeKind) String() string {
	switch k {
	case Added:
		return "added"
	case Changed:
		return "changed"
	case Unchanged:
		return "unchanged"
	case Removed:
		return "removed"
	}
	return fmt.Sprintf("ChangeKind(%d)", int(k))
}

// Reload makes next the apps served, all at once, and returns what
// changed, ordered by name. An app of the same version stays as it was
// (the next App, unused, is closed); a changed one is reconfigured
// (runner.Runner.Reconfigure): new runs take its new config while runs
// admitted before go on with theirs; a new one gets a runner; one not in
// next is removed: Lookup no longer finds it, so new runs of it are
// refused as for an unknown app, while its runs in flight finish on its
// runner, which Runners still lists (for drains) and which an app added
// back takes again. Nothing changes when an app's tree is refused
// (agent.NewTree) or a runner cannot be made: the error says why, and the
// Apps of next are closed. The Apps are the registry's to close
// otherwise, at Close: runs waiting on their caller may go on with any
// config of this process's life.
func (g *Registry) Reload(next []App) ([]Change, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fresh, err := g.checkReload(next)
	if err != nil {
		for _, a := range next {
			_ = a.Close()
		}
		return nil, err
	}
	var changes []Change
	seen := map[string]bool{}
	for _, app := range next {
		seen[app.Name] = true
		changes = append(changes, g.applyLocked(app, fresh[app.Name]))
	}
	for _, name := range slices.Sorted(maps.Keys(g.runners)) {
		if !seen[name] {
			r := g.runners[name]
			delete(g.runners, name)
			g.retired[name] = r
			changes = append(changes, Change{Name: name, Kind: Removed, Version: r.ConfigVersion()})
		}
	}
	slices.SortFunc(changes, func(a, b Change) int { return strings.Compare(a.Name, b.Name) })
	return changes, nil
}

// checkReload does what may fail before anything changes: every tree is
// checked, and the runners of new apps are made (fresh, by name).
func (g *Registry) checkReload(next []App) (map[string]*runner.Runner, error) {
	var errs []error
	fresh := map[string]*runner.Runner{}
	for _, app := range next {
		if _, err := agent.NewTree(app.Root); err != nil {
			errs = append(errs, fmt.Errorf("app %s: %w", app.Name, err))
			continue
		}
		if g.runners[app.Name] != nil || g.retired[app.Name] != nil {
			continue
		}
		r, err := runner.New(g.runnerConfig(app))
		if err != nil {
			errs = append(errs, fmt.Errorf("app %s: %w", app.Name, err))
			continue
		}
		fresh[app.Name] = r
	}
	if err := errors.Join(errs...); err != nil {
		for _, r := range fresh {
			// No run ever reached it: Shutdown only stops its
			// background work (Close would close the shared plugins).
			_ = r.Shutdown(context.Background())
		}
		return nil, fmt.Errorf("reload apps: %w", err)
	}
	return fresh, nil
}

// applyLocked serves app: on its new runner r, or on the one it has (or
// had, when a reload removed it).
func (g *Registry) applyLocked(app App, r *runner.Runner) Change {
	g.schedules[app.Name] = app.Schedules
	if r != nil {
		r.SetClaimGate(g.gate)
		g.runners[app.Name] = r
		g.closers = append(g.closers, app.Close)
		return Change{Name: app.Name, Kind: Added, Version: app.Version}
	}
	kind := Changed
	r, ok := g.runners[app.Name]
	if !ok {
		r, kind = g.retired[app.Name], Added
		delete(g.retired, app.Name)
		g.runners[app.Name] = r
	}
	if kind == Changed && app.Version != "" && app.Version == r.ConfigVersion() {
		_ = app.Close()
		return Change{Name: app.Name, Kind: Unchanged, Version: app.Version}
	}
	// Checked by checkReload: the tree is valid, and the store the
	// runner was made with keeps what any budgets need.
	if err := r.Reconfigure(g.runnerConfig(app)); err != nil && g.cfg.Logger != nil {
		g.cfg.Logger.Error("reconfigure app", "app", app.Name, "err", err)
	}
	g.closers = append(g.closers, app.Close)
	return Change{Name: app.Name, Kind: kind, Version: app.Version}
}

// SetClaimGate gives g to every runner, those a reload adds too (see
// runner.Runner.SetClaimGate).
func (g *Registry) SetClaimGate(gate runner.ClaimGate) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = gate
	for _, r := range g.runners {
		r.SetClaimGate(gate)
	}
	for _, r := range g.retired {
		r.SetClaimGate(gate)
	}
}

// Runners returns every runner: of the apps served, and of those a
// reload removed, whose runs may still be in flight. A drain waits for
// them all.
func (g *Registry) Runners() []*runner.Runner {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return slices.Collect(func(yield func(*runner.Runner) bool) {
		for _, m := range []map[string]*runner.Runner{g.runners, g.retired} {
			for _, r := range m {
				if !yield(r) {
					return
				}
			}
		}
	})
}
