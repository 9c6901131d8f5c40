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
//   - "tool" calls a tool of its own as adk-go's A2A server shows it: an
//     artifact with the call (a data part marked adk_type function_call,
//     {id, name: "lookup", args: {q}}), one with its response (marked
//     function_response, {found: true}), then "looked it up" and
//     completes;
//   - "wait" waits on a tool call its caller must answer, as adk-go's
//     server does: input-required, the status message "need an order"
//     and a function_call data part {id: "wait-<task id>", name:
//     "get_order", args: {order_id: "42"}} marked adk_is_long_running; a
//     continuation holding a function_response data part to that id
//     completes the task with "got <response as JSON>";
//   - anything else streams "remote echo: <text>" word by word and
//     completes.
//
// "The text" is the first text part that is not "For context:" narration.
// Every message received is recorded (Received), with its ids and parts,
// and every task cancelled (Canceled).
//
// Imports: the a2a-go SDK and the standard library. It must not import
// the runner, agents, server, cmd or gRPC (runner/deps_test.go checks).
package remotea2atest

import (
	"context"
	"encoding/json"
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
	// MessageID is the message's id; Parts are its parts as they came.
	MessageID string
	Parts     []*a2a.Part
}

// Server is a running stand-in.
type Server struct {
	// URL is the base URL: the card is at URL + a2asrv.WellKnownAgentCardPath.
	URL string
	// Hung receives once each time a "hang" task has streamed its chunk
	// and waits.
	Hung chan struct{}
	// Canceled receives the id of each task cancelled.
	Canceled chan string

	srv      *httptest.Server
	killed   chan struct{}
	killOnce sync.Once
	opts     Options
	mu       sync.Mutex
	received []Received
	headers  []string
}

// Start serves a stand-in until the test ends (or Kill).
func Start(tb interface {
	Cleanup(func())
}) *Server {
	return StartWith(tb, Options{})
}

// StartWith serves a stand-in with opts until the test ends (or Kill).
func StartWith(tb interface {
	Cleanup(func())
}, opts Options) *Server {
	s := &Server{Hung: make(chan struct{}, 8), Canceled: make(chan string, 8), killed: make(chan struct{}), opts: opts}
	mux := http.NewServeMux()
	s.srv = httptest.NewServer(s.echo(mux))
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
		e.s.record(Received{TaskID: string(ec.TaskID), ContextID: ec.ContextID, Text: all, Continued: continued, MessageID: ec.Message.ID, Parts: ec.Message.Parts})
		if !continued && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		switch {
		case continued && ec.StoredTask.Status.State == a2a.TaskStateInputRequired && answerOf(ec) != "":
			e.finish(ec, []string{"got " + answerOf(ec)}, yield)
		case continued && ec.StoredTask.Status.State == a2a.TaskStateInputRequired:
			e.finish(ec, []string{"order " + text + " confirmed"}, yield)
		case strings.HasPrefix(text, "tool"):
			e.tool(ec, text, yield)
		case strings.HasPrefix(text, "wait"):
			call := toolData("function_call", map[string]any{"id": "wait-" + string(ec.TaskID), "name": "get_order", "args": map[string]any{"order_id": "42"}})
			call.SetMeta("adk_is_long_running", true)
			q := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("need an order"), call)
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, q), nil)
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

// tool shows a call of the stand-in's own tool and its response, as
// adk-go's server does, then answers.
func (e executor) tool(ec *a2asrv.ExecutorContext, text string, yield func(a2a.Event, error) bool) {
	call := toolData("function_call", map[string]any{"id": "lookup-" + string(ec.TaskID), "name": "lookup", "args": map[string]any{"q": text}})
	call.SetMeta("adk_is_long_running", false)
	resp := toolData("function_response", map[string]any{"id": "lookup-" + string(ec.TaskID), "name": "lookup", "response": map[string]any{"found": true}})
	for _, p := range []*a2a.Part{call, resp} {
		ev := a2a.NewArtifactEvent(ec, p)
		ev.LastChunk = true
		ev.Metadata = map[string]any{"adk_partial": false}
		if !yield(ev, nil) {
			return
		}
	}
	e.finish(ec, []string{"looked ", "it ", "up"}, yield)
}

// toolData is a data part marked as adk-go marks calls and responses.
func toolData(typ string, v map[string]any) *a2a.Part {
	p := a2a.NewDataPart(v)
	p.SetMeta("adk_type", typ)
	return p
}

// answerOf is the JSON of the response a continuation gives to the
// task's waiting call, or "".
func answerOf(ec *a2asrv.ExecutorContext) string {
	for _, p := range ec.Message.Parts {
		d, ok := p.Content.(a2a.Data)
		m, _ := d.Value.(map[string]any)
		if ok && p.Metadata["adk_type"] == "function_response" && m["id"] == "wait-"+string(ec.TaskID) {
			b, _ := json.Marshal(m["response"])
			return string(b)
		}
	}
	return ""
}

func (e executor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	select {
	case e.s.Canceled <- string(ec.TaskID):
	default: // a test that reads no cancellations does not block the server
	}
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
