package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
)

// Error is a plugin hook's error (or recovered panic), as the caller
// receives it inside an *agent.AgentError.
type Error struct {
	// Plugin is the plugin's name; Hook the hook's ("before_model").
	Plugin, Hook string
	Err          error
}

func (e *Error) Error() string { return fmt.Sprintf("plugin %s %s: %v", e.Plugin, e.Hook, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// hooked is one plugin's implementation of one hook.
type hooked[H any] struct {
	name string
	hook H
}

// Manager runs an ordered list of plugins' hooks. It implements
// agent.Hooks and the hooks the LLM agent looks for. A nil *Manager has no
// plugins. It is safe for concurrent use.
type Manager struct {
	plugins     []Plugin
	log         *slog.Logger
	userMessage []hooked[UserMessageHook]
	beforeRun   []hooked[BeforeRunHook]
	afterRun    []hooked[AfterRunHook]
	event       []hooked[EventHook]
	partial     []hooked[EventHook] // those of event that see partial events too
	beforeAgent []hooked[BeforeAgentHook]
	afterAgent  []hooked[AfterAgentHook]
	beforeModel []hooked[BeforeModelHook]
	afterModel  []hooked[AfterModelHook]
	modelError  []hooked[ModelErrorHook]
	beforeTool  []hooked[BeforeToolHook]
	afterTool   []hooked[AfterToolHook]
	toolError   []hooked[ToolErrorHook]
	closers     []hooked[Closer]
}

// NewManager checks the plugins (none nil, names non-empty and unique) and
// finds the hooks each implements. log receives recovered panics; nil
// discards them.
func NewManager(plugins []Plugin, log *slog.Logger) (*Manager, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{log: log}
	seen := map[string]bool{}
	for i, p := range plugins {
		switch {
		case p == nil:
			return nil, fmt.Errorf("plugin %d is nil", i)
		case p.Name() == "":
			return nil, fmt.Errorf("plugin %d (%T) has no name", i, p)
		case seen[p.Name()]:
			return nil, fmt.Errorf("duplicate plugin name %q", p.Name())
		}
		seen[p.Name()] = true
		m.plugins = append(m.plugins, p)
		m.add(p)
	}
	return m, nil
}

func (m *Manager) add(p Plugin) {
	n := p.Name()
	register(&m.userMessage, n, p)
	register(&m.beforeRun, n, p)
	register(&m.afterRun, n, p)
	register(&m.event, n, p)
	if _, completeOnly := p.(CompleteEventHook); !completeOnly {
		register(&m.partial, n, p)
	}
	register(&m.beforeAgent, n, p)
	register(&m.afterAgent, n, p)
	register(&m.beforeModel, n, p)
	register(&m.afterModel, n, p)
	register(&m.modelError, n, p)
	register(&m.beforeTool, n, p)
	register(&m.afterTool, n, p)
	register(&m.toolError, n, p)
	register(&m.closers, n, p)
}

func register[H any](list *[]hooked[H], name string, p Plugin) {
	if h, ok := p.(H); ok {
		*list = append(*list, hooked[H]{name: name, hook: h})
	}
}

// Len is the number of plugins.
func (m *Manager) Len() int {
	if m == nil {
		return 0
	}
	return len(m.plugins)
}

// Plugins returns the plugins in order.
func (m *Manager) Plugins() []Plugin {
	if m == nil {
		return nil
	}
	return append([]Plugin(nil), m.plugins...)
}

// first calls the hooks in order until one returns a value (set reports
// whether it did) or an error; a panic is recovered into an error.
func first[H, R any](ctx context.Context, m *Manager, hook string, hs []hooked[H], set func(R) bool, call func(H) (R, error)) (R, error) {
	var zero R
	for _, h := range hs {
		var r R
		err := agent.GuardNamed(ctx, m.log, func() (e error) {
			r, e = call(h.hook)
			return e
		}, "plugin ", h.name, " ", hook)
		if err != nil {
			return zero, &Error{Plugin: h.name, Hook: hook, Err: err}
		}
		if set(r) {
			return r, nil
		}
	}
	return zero, nil
}

func isContent(c *agentrunnerv1.Content) bool { return c != nil }
func isEvent(e *agentrunnerv1.Event) bool     { return e != nil }
func isResponse(r *model.Response) bool       { return r != nil }
func isResult(r map[string]any) bool          { return r != nil }

// OnUserMessage runs the on_user_message hooks on a copy of msg (it is
// the caller's request); a non-nil content replaces the message.
func (m *Manager) OnUserMessage(ctx agent.InvocationContext, msg *agentrunnerv1.Content) (*agentrunnerv1.Content, error) {
	if m == nil || len(m.userMessage) == 0 {
		return nil, nil
	}
	msg = msg.CloneVT()
	return first(ctx, m, "on_user_message", m.userMessage, isContent, func(h UserMessageHook) (*agentrunnerv1.Content, error) {
		return h.OnUserMessage(ctx, msg)
	})
}

// BeforeRun runs the before_run hooks; a non-nil content ends the run.
func (m *Manager) BeforeRun(ctx agent.InvocationContext) (*agentrunnerv1.Content, error) {
	if m == nil || len(m.beforeRun) == 0 {
		return nil, nil
	}
	return first(ctx, m, "before_run", m.beforeRun, isContent, func(h BeforeRunHook) (*agentrunnerv1.Content, error) {
		return h.BeforeRun(ctx)
	})
}

// AfterRun runs every after_run hook; panics are recovered and logged.
func (m *Manager) AfterRun(ctx agent.InvocationContext, runErr error) {
	if m == nil || len(m.afterRun) == 0 {
		return
	}
	for _, h := range m.afterRun {
		_ = agent.GuardNamed(ctx, m.log, func() error {
			h.hook.AfterRun(ctx, runErr)
			return nil
		}, "plugin ", h.name, " after_run")
	}
}

// OnEvent runs the on_event hooks on a partial or complete event; a
// non-nil event replaces ev, and an error that is ErrDropPartial drops a
// partial ev. Without on_event hooks it returns at once, and a partial
// event skips the hooks that look at complete events only
// (CompleteEventHook): it runs for every chunk of a stream.
func (m *Manager) OnEvent(ctx agent.InvocationContext, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	if m == nil {
		return nil, nil
	}
	hs := m.event
	if ev.GetPartial() {
		hs = m.partial
	}
	if len(hs) == 0 {
		return nil, nil
	}
	return first(ctx, m, "on_event", hs, isEvent, func(h EventHook) (*agentrunnerv1.Event, error) {
		return h.OnEvent(ctx, ev)
	})
}

// BeforeAgent runs the before_agent hooks.
func (m *Manager) BeforeAgent(ctx agent.CallbackContext) (*agentrunnerv1.Content, error) {
	if m == nil || len(m.beforeAgent) == 0 {
		return nil, nil
	}
	return first(ctx, m, "before_agent", m.beforeAgent, isContent, func(h BeforeAgentHook) (*agentrunnerv1.Content, error) {
		return h.BeforeAgent(ctx)
	})
}

// AfterAgent runs the after_agent hooks.
func (m *Manager) AfterAgent(ctx agent.CallbackContext) (*agentrunnerv1.Content, error) {
	if m == nil || len(m.afterAgent) == 0 {
		return nil, nil
	}
	return first(ctx, m, "after_agent", m.afterAgent, isContent, func(h AfterAgentHook) (*agentrunnerv1.Content, error) {
		return h.AfterAgent(ctx)
	})
}

// HasBeforeModel reports whether any plugin may change model requests
// before the call, so that the LLM agent copies a request only when
// someone can change it: hooks that are RequestObservers only read it.
func (m *Manager) HasBeforeModel() bool {
	if m == nil {
		return false
	}
	for _, h := range m.beforeModel {
		if _, ok := h.hook.(RequestObserver); !ok {
			return true
		}
	}
	return false
}

// BeforeModel runs the before_model hooks.
func (m *Manager) BeforeModel(ctx agent.CallbackContext, req *model.Request) (*model.Response, error) {
	if m == nil || len(m.beforeModel) == 0 {
		return nil, nil
	}
	return first(ctx, m, "before_model", m.beforeModel, isResponse, func(h BeforeModelHook) (*model.Response, error) {
		return h.BeforeModel(ctx, req)
	})
}

// AfterModel runs the after_model hooks.
func (m *Manager) AfterModel(ctx agent.CallbackContext, resp *model.Response) (*model.Response, error) {
	if m == nil || len(m.afterModel) == 0 {
		return nil, nil
	}
	return first(ctx, m, "after_model", m.afterModel, isResponse, func(h AfterModelHook) (*model.Response, error) {
		return h.AfterModel(ctx, resp)
	})
}

// OnModelError runs the on_model_error hooks.
func (m *Manager) OnModelError(ctx agent.CallbackContext, req *model.Request, err error) (*model.Response, error) {
	if m == nil || len(m.modelError) == 0 {
		return nil, nil
	}
	return first(ctx, m, "on_model_error", m.modelError, isResponse, func(h ModelErrorHook) (*model.Response, error) {
		return h.OnModelError(ctx, req, err)
	})
}

// BeforeTool runs the before_tool hooks.
func (m *Manager) BeforeTool(ctx tool.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
	if m == nil || len(m.beforeTool) == 0 {
		return nil, nil
	}
	return first(ctx, m, "before_tool", m.beforeTool, isResult, func(h BeforeToolHook) (map[string]any, error) {
		return h.BeforeTool(ctx, t, args)
	})
}

// AfterTool runs the after_tool hooks.
func (m *Manager) AfterTool(ctx tool.Context, t tool.Tool, args, result map[string]any) (map[string]any, error) {
	if m == nil || len(m.afterTool) == 0 {
		return nil, nil
	}
	return first(ctx, m, "after_tool", m.afterTool, isResult, func(h AfterToolHook) (map[string]any, error) {
		return h.AfterTool(ctx, t, args, result)
	})
}

// OnToolError runs the on_tool_error hooks.
func (m *Manager) OnToolError(ctx tool.Context, t tool.Tool, args map[string]any, err error) (map[string]any, error) {
	if m == nil || len(m.toolError) == 0 {
		return nil, nil
	}
	return first(ctx, m, "on_tool_error", m.toolError, isResult, func(h ToolErrorHook) (map[string]any, error) {
		return h.OnToolError(ctx, t, args, err)
	})
}

// Close closes the plugins that hold resources, all at once, and returns
// when they are done or ctx is, whichever comes first; a plugin still
// closing then is reported and left behind.
func (m *Manager) Close(ctx context.Context) error {
	if m == nil || len(m.closers) == 0 {
		return nil
	}
	errs := make([]error, len(m.closers))
	var wg sync.WaitGroup
	for i, c := range m.closers {
		wg.Go(func() {
			errs[i] = agent.Guard(ctx, m.log, "plugin "+c.name+" close", func() error { return c.hook.Close(ctx) })
			if errs[i] != nil {
				errs[i] = &Error{Plugin: c.name, Hook: "close", Err: errs[i]}
			}
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return errors.Join(errs...)
	case <-ctx.Done():
		return fmt.Errorf("close plugins: %w", ctx.Err())
	}
}
