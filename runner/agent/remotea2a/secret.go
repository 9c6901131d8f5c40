package remotea2a

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// A remote agent's header (header_env) is a secret of the operator's. A
// remote that echoes it (in an error, in its answer) must not put it into
// what the runner keeps and shows: the agent's errors, its events and its
// logs have it cut out.

// Redacted is what a secret is replaced with.
const Redacted = "[redacted]"

// minSecret is the shortest value cut out: a shorter one would mangle
// ordinary text and protects nothing.
const minSecret = 4

// redactor cuts secrets out of strings; the zero value cuts nothing.
type redactor struct{ secrets []string }

func newRedactor(secrets ...string) redactor {
	var r redactor
	for _, s := range secrets {
		if s = strings.TrimSpace(s); len(s) >= minSecret {
			r.secrets = append(r.secrets, s)
		}
	}
	return r
}

func (r redactor) string(s string) string {
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	return s
}

// err returns err, or, when its text shows a secret, an error of the same
// text with it cut out. The chain is dropped then, on purpose: a caller
// unwrapping it would find the secret again. A context's end is kept
// (the runner tells a stopped run by it).
func (r redactor) err(err error) error {
	if err == nil || len(r.secrets) == 0 {
		return err
	}
	msg := err.Error()
	clean := r.string(msg)
	if clean == msg {
		return err
	}
	for _, keep := range []error{context.Canceled, context.DeadlineExceeded, ErrAnswerTooLarge} {
		if errors.Is(err, keep) {
			return fmt.Errorf("%s (%w)", clean, keep)
		}
	}
	return errors.New(clean)
}

// RedactError returns err with secrets cut out of its text (as the
// agent's own errors are), for errors its builder shows.
func RedactError(err error, secrets ...string) error {
	return newRedactor(secrets...).err(err)
}

// event cuts the secrets out of every string of ev, in place.
func (r redactor) event(ev *agentrunnerv1.Event) {
	if ev != nil && len(r.secrets) > 0 {
		r.message(ev.ProtoReflect())
	}
}

// message walks m's fields: strings, lists and maps of them, and nested
// messages (a Struct's values among them).
func (r redactor) message(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if nv, ok := r.value(fd, l.Get(i)); ok {
					l.Set(i, nv)
				}
			}
		case fd.IsMap():
			mp := v.Map()
			mp.Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if nv, ok := r.value(fd.MapValue(), mv); ok {
					mp.Set(k, nv)
				}
				return true
			})
		default:
			if nv, ok := r.value(fd, v); ok {
				m.Set(fd, nv)
			}
		}
		return true
	})
}

// value redacts one value of field fd; ok reports that a string changed.
func (r redactor) value(fd protoreflect.FieldDescriptor, v protoreflect.Value) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if s := r.string(v.String()); s != v.String() {
			return protoreflect.ValueOfString(s), true
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		r.message(v.Message())
	}
	return v, false
}

// logger returns l with the secrets cut out of its messages and attributes.
func (r redactor) logger(l *slog.Logger) *slog.Logger {
	if len(r.secrets) == 0 {
		return l
	}
	return slog.New(redactHandler{h: l.Handler(), r: r})
}

// redactHandler is a slog.Handler that redacts before it passes on.
type redactHandler struct {
	h slog.Handler
	r redactor
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.string(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.string(v.String()))
	case slog.KindGroup:
		var as []any
		for _, g := range v.Group() {
			as = append(as, h.attr(g))
		}
		return slog.Group(a.Key, as...)
	case slog.KindAny:
		// An error, or anything else that prints: what it prints is
		// what a handler would write.
		s := fmt.Sprint(v.Any())
		if c := h.r.string(s); c != s {
			return slog.String(a.Key, c)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = h.attr(a)
	}
	return redactHandler{h: h.h.WithAttrs(clean), r: h.r}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h: h.h.WithGroup(name), r: h.r}
}

// IsLoopback reports whether host ("host" or "host:port") is a loopback
// one: localhost, or a loopback IP. Only there may a secret header go
// over plain http.
func IsLoopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
