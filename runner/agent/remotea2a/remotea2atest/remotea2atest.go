// Package remotea2atest is a stand-in for another team's A2A agent, for
// tests: the a2a-go SDK's own server on a loopback port (JSON-RPC
// transport, card at the well-known path), with an executor whose
// behaviour the user's message picks:
//
//   - a message whose text starts with "ask" makes the task ask for input
//     (input-required, "what is your order number?"); the answer that
//     continues the task completes it with "order <answer> confirmed";
//   - "fail" streams "partial work", then fails the task ("the remote
//     agent broke");
//   - "hang" streams "working on it", then waits until the request's
//     context ends (the caller gives up, or Kill closes the server);
//   - anything else streams "remote echo: <text>" word by word and
//     completes.
//
// "The text" is the first text part that is not "For context:" narration.
// Every message received is recorded (Received), with its task and
// context ids.
//
// Imports: the a2a-go SDK and the standard library. It must not import
// the runner, agents, server, cmd or gRPC (runner/deps_test.go checks).
package remotea2atest

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Received is one message the stand-in got.
type Received struct {
	TaskID, ContextID string
	// Text is the message's text parts joined with newlines.
	Text string
	// Continued is set when the message continued a stored task.
	Continued bool
}

// Server is a running stand-in.
type Server struct {
	// URL is the base URL: the card is at URL + a2asrv.WellKnownAgentCardPath.
	URL string
	// Hung receives once each time a "hang" task has streamed its chunk
	// and waits.
	Hung chan struct{}

	srv      *httptest.Server
	killed   chan struct{}
	killOnce sync.Once
	mu       sync.Mutex
	received []Received
}

// Start serves a stand-in until the test ends (or Kill).
func Start(tb interface {
	Cleanup(func())
}) *Server {
	s := &Server{Hung: make(chan struct{}, 8), killed: make(chan struct{})}
	mux := http.NewServeMux()
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	card := &a2a.AgentCard{
		Name:                "stand-in",
		Description:         "Another team's agent: echoes, asks for an order number, fails or hangs.",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(s.URL+"/invoke", a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain"},
		DefaultOutputModes:  []string{"text/plain"},
		Version:             "1.0.0",
	}
	mux.Handle("/invoke", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(executor{s})))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	tb.Cleanup(s.Kill)
	return s
}

// Kill closes the server and every connection to it, as a crash would.
func (s *Server) Kill() {
	s.killOnce.Do(func() {
		// The SDK runs executors on goroutines of their own: a hanging
		// one is released here, so that Close's wait for handlers ends.
		close(s.killed)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Received returns the messages received so far, in order.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

func (s *Server) record(r Received) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received = append(s.received, r)
}

type executor struct{ s *Server }

func (e executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text, all := userText(ec.Message)
		continued := ec.StoredTask != nil
		e.s.record(Received{TaskID: string(ec.TaskID), ContextID: ec.ContextID, Text: all, Continued: continued})
		if !continued && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		switch {
		case continued && ec.StoredTask.Status.State == a2a.TaskStateInputRequired:
			e.finish(ec, []string{"order " + text + " confirmed"}, yield)
		case strings.HasPrefix(text, "ask"):
			q := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("what is your order number?"))
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, q), nil)
		case strings.HasPrefix(text, "fail"):
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("partial work")), nil) {
				return
			}
			msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("the remote agent broke"))
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, msg), nil)
		case strings.HasPrefix(text, "hang"):
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("working on it")), nil) {
				return
			}
			e.s.Hung <- struct{}{}
			select {
			case <-ctx.Done():
			case <-e.s.killed:
			}
		default:
			words := strings.Fields("remote echo: " + text)
			for i := range words {
				if i < len(words)-1 {
					words[i] += " "
				}
			}
			e.finish(ec, words, yield)
		}
	}
}

// finish streams chunks as one artifact, then completes the task.
func (e executor) finish(ec *a2asrv.ExecutorContext, chunks []string, yield func(a2a.Event, error) bool) {
	var id a2a.ArtifactID
	for i, c := range chunks {
		var ev *a2a.TaskArtifactUpdateEvent
		if i == 0 {
			ev = a2a.NewArtifactEvent(ec, a2a.NewTextPart(c))
			id = ev.Artifact.ID
		} else {
			ev = a2a.NewArtifactUpdateEvent(ec, id, a2a.NewTextPart(c))
			ev.Append = true
		}
		ev.LastChunk = i == len(chunks)-1
		if !yield(ev, nil) {
			return
		}
	}
	yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
}

func (e executor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// userText returns the first text part that is not narration, and all
// text parts joined.
func userText(m *a2a.Message) (first, all string) {
	var texts []string
	for _, p := range m.Parts {
		t, ok := p.Content.(a2a.Text)
		if !ok {
			if d, ok := p.Content.(a2a.Data); ok {
				t = a2a.Text(fmt.Sprint(d.Value))
			} else {
				continue
			}
		}
		texts = append(texts, string(t))
		if first == "" && !strings.HasPrefix(string(t), "For context:") {
			first = string(t)
		}
	}
	return first, strings.Join(texts, "\n")
}
