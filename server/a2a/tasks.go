package a2a

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/server/internal/front"
	"github.com/agentrunner/agentrunner/store"
)

// SendMessage runs the message to its end and returns the task (see
// start). ReturnImmediately is not offered: the client streams instead.
func (h *Handler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	var task *a2a.Task
	for ev, err := range h.send(ctx, req, false) {
		if err != nil {
			return nil, err
		}
		task = apply(task, ev)
	}
	if task == nil {
		return nil, a2a.NewError(a2a.ErrInternalError, "the run produced no task")
	}
	return task, nil
}

// SendStreamingMessage streams the run of the message as the task's
// events, partial chunks included (streaming mode SSE).
func (h *Handler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return h.send(ctx, req, true)
}

// send starts the run of a message and translates it. A message with a
// task id that waits on its caller and answers its calls resumes that
// task; any other message is a new run (a new task) on the session its
// context id names, created when new (a message without one starts a new
// session).
func (h *Handler) send(ctx context.Context, req *a2a.SendMessageRequest, streaming bool) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		k, msg, seq, prior, err := h.start(ctx, req, streaming)
		if err != nil {
			yield(nil, err)
			return
		}
		t := newTranslator(h.s.Store(), k, "", msg)
		if prior != nil {
			// A resumed task: its stream names answers after the earlier ones.
			if err := h.eachEvent(ctx, prior, func(ev *agentrunnerv1.Event) error { t.seed(ev); return nil }); err != nil {
				yield(nil, h.fail(ctx, err))
				return
			}
		}
		for u, err := range seq {
			if err != nil {
				if !t.ended {
					yield(nil, h.fail(ctx, err))
				}
				return
			}
			if u.Run != nil && t.info.TaskID == "" {
				t.info.TaskID = a2a.TaskID(u.Run.GetRunId())
				msg.TaskID, msg.ContextID = t.info.TaskID, k.Session
			}
			evs, err := t.events(ctx, u)
			if err != nil {
				if !t.ended {
					yield(nil, h.fail(ctx, err))
				}
				return
			}
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
			}
		}
	}
}

// start checks a send, picks its session and starts or resumes the run.
// For a resumed run it returns the run's record as it was before
// (prior), nil otherwise.
func (h *Handler) start(ctx context.Context, req *a2a.SendMessageRequest, streaming bool) (k store.SessionKey, msg *a2a.Message, seq iter.Seq2[runner.Update, error], prior *agentrunnerv1.Run, err error) {
	if req == nil || req.Message == nil {
		return k, nil, nil, nil, fmt.Errorf("%w: message is required", a2a.ErrInvalidParams)
	}
	if req.Config != nil && req.Config.PushConfig != nil {
		return k, nil, nil, nil, a2a.ErrPushNotificationNotSupported
	}
	content, err := fromA2AMessage(req.Message)
	if err != nil {
		return k, nil, nil, nil, err
	}
	m := *req.Message
	msg = &m
	if msg.TaskID != "" {
		seq, rk, run, err := h.reply(ctx, req.Tenant, msg, content)
		if err != nil || seq != nil {
			return rk, msg, seq, run, err
		}
		// A plain message to a waiting task: a new run in the task's
		// session, the task's user's (not the caller's default one).
		k = rk
	} else if k, err = h.newKey(ctx, req.Tenant, msg.ContextID); err != nil {
		return k, nil, nil, nil, err
	}
	seq, err = h.newRun(ctx, k, msg, content, streaming)
	return k, msg, seq, nil, err
}

// newRun starts the run of a message that is no reply: a new task in
// session k, which is created when new.
func (h *Handler) newRun(ctx context.Context, k store.SessionKey, msg *a2a.Message, content *agentrunnerv1.Content, streaming bool) (iter.Seq2[runner.Update, error], error) {
	// A send a budget refuses creates nothing: asked before the session
	// is created, as the run itself is refused only once it is.
	if err := h.s.CheckBudgets(ctx, k); err != nil {
		return nil, h.fail(ctx, err)
	}
	created, err := h.s.OpenSession(ctx, k)
	if err != nil {
		return nil, h.fail(ctx, err)
	}
	rr := &servicev1.RunRequest{AppName: k.App, UserId: k.User, SessionId: k.Session, NewMessage: content, RequestId: requestID(msg.ID)}
	if streaming {
		rr.RunConfig = &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}
	}
	seq, err := h.s.Run(ctx, rr)
	if err != nil {
		if created && msg.ContextID == "" {
			// A refused run (too large, too many runs) leaves no empty
			// session behind for each retry. Only a context made here:
			// one the client named may have a run of another send by now.
			_ = h.s.Store().DeleteSession(context.WithoutCancel(ctx), k)
		}
		return nil, h.fail(ctx, err)
	}
	if created && msg.ContextID == "" {
		seq = h.dropIfRefused(ctx, k, seq)
	}
	msg.ContextID = k.Session
	return seq, nil
}

// dropIfRefused deletes the session k, made here for a send, when its run
// is refused before it starts (its first update is an error, as a budget
// reached since CheckBudgets gives): the run stored nothing in it.
func (h *Handler) dropIfRefused(ctx context.Context, k store.SessionKey, seq iter.Seq2[runner.Update, error]) iter.Seq2[runner.Update, error] {
	return func(yield func(runner.Update, error) bool) {
		first := true
		for u, err := range seq {
			if first && err != nil {
				_ = h.s.Store().DeleteSession(context.WithoutCancel(ctx), k)
			}
			first = false
			if !yield(u, err) {
				return
			}
		}
	}
}

// requestID is the run's idempotency key for a message id: a client that
// sends a message again with its id (a caller's retry, an agentrunner
// remote agent resumed after a crash) in the same context gets the first
// send's task instead of a second run. A digest, so that any message id
// makes a valid request_id.
func requestID(messageID string) string {
	if messageID == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(messageID))
	return "a2a-message-" + hex.EncodeToString(sum[:16])
}

// newKey is the session of a send without a task: the caller's user's,
// in the context it names or a new one.
func (h *Handler) newKey(ctx context.Context, tenant, contextID string) (store.SessionKey, error) {
	app, err := h.appOf(ctx, tenant)
	if err != nil {
		return store.SessionKey{}, err
	}
	user, err := h.userOf(ctx, app)
	if err != nil {
		return store.SessionKey{}, err
	}
	k := store.SessionKey{App: app, User: user, Session: contextID}
	if k.Session == "" {
		k.Session = newContextID()
	}
	return k, nil
}

// reply handles a message sent to an existing task: one that waits on
// its caller and whose message answers its calls is resumed (the same
// task goes on); one that waits and gets a plain message is left to a new
// run in its session, which supersedes its calls (nil sequence, the
// message's context set); one that runs or has ended takes no message.
func (h *Handler) reply(ctx context.Context, tenant string, msg *a2a.Message, content *agentrunnerv1.Content) (iter.Seq2[runner.Update, error], store.SessionKey, *agentrunnerv1.Run, error) {
	_, run, err := h.task(ctx, tenant, msg.TaskID)
	if err != nil {
		return nil, store.SessionKey{}, nil, err
	}
	k := store.SessionKey{App: run.GetAppName(), User: run.GetUserId(), Session: run.GetSessionId()}
	if msg.ContextID != "" && msg.ContextID != k.Session {
		return nil, k, nil, fmt.Errorf("%w: task %s is in context %q, not %q", a2a.ErrInvalidParams, msg.TaskID, k.Session, msg.ContextID)
	}
	if run.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
		return nil, k, nil, a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf("task %s is %s: only a task waiting on input takes a message; send one without a task id to start another task in context %s", msg.TaskID, taskState(run.GetStatus()), k.Session))
	}
	msg.ContextID = k.Session
	if !answersCalls(content) {
		msg.TaskID = ""
		return nil, k, nil, nil
	}
	seq, err := h.s.ResumeRun(ctx, &servicev1.ResumeRunRequest{RunId: run.GetRunId(), Answers: content})
	if err != nil {
		return nil, k, nil, h.fail(ctx, err)
	}
	return seq, k, run, nil
}

// GetTask returns a task as its stored events tell it, with at most
// historyLength messages of its history when the request gives one.
func (h *Handler) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	_, run, err := h.task(ctx, req.Tenant, req.ID)
	if err != nil {
		return nil, err
	}
	task, _, err := h.taskOf(ctx, run, h.responseBytes())
	if err != nil {
		return nil, h.fail(ctx, err)
	}
	return withHistory(task, req.HistoryLength), nil
}

// withHistory keeps the n most recent messages of task's history; nil
// keeps them all.
func withHistory(task *a2a.Task, n *int) *a2a.Task {
	if n != nil && *n >= 0 && len(task.History) > *n {
		task.History = task.History[len(task.History)-*n:]
	}
	return task
}

// responseBytes bounds the artifacts of the tasks one response carries:
// what a message of the server's limit holds, less room for the rest.
func (h *Handler) responseBytes() int {
	return front.MaxItemBytes(h.s.MaxMessageBytes())
}

// taskTooLarge is the error of a task whose artifacts pass budget bytes:
// it is read another way. Its status is ResourceExhausted.
type taskTooLarge struct {
	id     string
	budget int
}

func (e *taskTooLarge) Error() string { return e.GRPCStatus().Message() }

func (e *taskTooLarge) GRPCStatus() *status.Status {
	return status.Newf(codes.ResourceExhausted, "task %s carries more than %d bytes of artifacts, more than one response holds: "+
		"follow it with SubscribeToTask, or read its events with RunnerService.ListEvents", e.id, e.budget)
}

// maxTaskPages bounds the pages of events GetTask reads: a task is one
// run, whose events are far fewer than this many pages.
const maxTaskPages = 100

// taskOf builds a task from the run's record and its stored events, and
// returns the encoded size of its artifacts' parts too. A task whose
// artifacts pass budget bytes is refused (a *taskTooLarge, which the
// caller passes to fail) as soon as they do.
func (h *Handler) taskOf(ctx context.Context, run *agentrunnerv1.Run, budget int) (*a2a.Task, int, error) {
	k := store.SessionKey{App: run.GetAppName(), User: run.GetUserId(), Session: run.GetSessionId()}
	t := newTranslator(h.s.Store(), k, run.GetRunId())
	task := apply(nil, t.record(run)[0])
	err := h.eachEvent(ctx, run, func(ev *agentrunnerv1.Event) error {
		out, err := t.events(ctx, runner.Update{Event: ev})
		if err != nil {
			return err
		}
		if t.bytes > budget {
			return &taskTooLarge{id: run.GetRunId(), budget: budget}
		}
		for _, e := range out {
			task = apply(task, e)
		}
		return nil
	})
	var large *taskTooLarge
	if errors.As(err, &large) {
		return nil, 0, err
	}
	if err != nil {
		return nil, 0, h.fail(ctx, err)
	}
	task.Status = statusOf(run, t.calls)
	task.History = t.history
	return task, t.bytes, nil
}

// eachEvent calls fn with each stored event of run, as its record
// bounds them, oldest first, and stops at fn's first error.
func (h *Handler) eachEvent(ctx context.Context, run *agentrunnerv1.Run, fn func(*agentrunnerv1.Event) error) error {
	k := store.SessionKey{App: run.GetAppName(), User: run.GetUserId(), Session: run.GetSessionId()}
	page := store.Page{Size: h.s.MaxPageSize()}
	after := store.EventFilter{AfterSequence: max(run.GetFirstSequence(), 1) - 1}
	for range maxTaskPages {
		evs, next, err := h.s.Store().ListEvents(ctx, k, after, page)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if last := run.GetLastSequence(); last != 0 && ev.GetSequence() > last {
				return nil // past the run: the session went on after it
			}
			if err := fn(ev); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		page.Token = next
	}
	return nil
}

// CancelTask cancels a running task (CancelRun) and returns it; a task
// that has ended is not cancelable.
func (h *Handler) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	ar, run, err := h.task(ctx, req.Tenant, req.ID)
	if err != nil {
		return nil, err
	}
	if ended(run.GetStatus()) && run.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
		return nil, a2a.NewError(a2a.ErrTaskNotCancelable, fmt.Sprintf("task %s is %s", req.ID, taskState(run.GetStatus())))
	}
	run, err = ar.Cancel(ctx, string(req.ID))
	if err != nil {
		return nil, h.fail(ctx, err)
	}
	task, _, err := h.taskOf(ctx, run, h.responseBytes())
	if err != nil {
		return nil, h.fail(ctx, err)
	}
	return task, nil
}

// SubscribeToTask follows a task (AttachRun): every event from its start,
// once, then its updates until it ends; an ended task is replayed.
func (h *Handler) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		ar, run, err := h.task(ctx, req.Tenant, req.ID)
		if err != nil {
			yield(nil, err)
			return
		}
		k := store.SessionKey{App: run.GetAppName(), User: run.GetUserId(), Session: run.GetSessionId()}
		t := newTranslator(h.s.Store(), k, run.GetRunId())
		for u, err := range ar.Attach(ctx, run.GetRunId(), 0) {
			var evs []a2a.Event
			if err == nil {
				evs, err = t.events(ctx, u)
			}
			if err != nil {
				if !t.ended {
					yield(nil, h.fail(ctx, err))
				}
				return
			}
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
			}
		}
	}
}

// ListTasks lists the caller's tasks of the app (ListRuns), newest first:
// a context's, or every context's of the user.
func (h *Handler) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	app, err := h.appOf(ctx, req.Tenant)
	if err != nil {
		return nil, err
	}
	user, err := h.userOf(ctx, app)
	if err != nil {
		return nil, err
	}
	ar, _ := h.s.Apps().Lookup(app)
	f := store.RunFilter{App: app, User: user, Session: req.ContextID}
	if req.Status != a2a.TaskStateUnspecified {
		if f.Statuses = runStatuses(req.Status); len(f.Statuses) == 0 {
			return &a2a.ListTasksResponse{Tasks: []*a2a.Task{}}, nil
		}
	}
	if req.PageSize < 0 || req.PageSize > 100 {
		return nil, fmt.Errorf("%w: pageSize %d is not between 1 and 100", a2a.ErrInvalidParams, req.PageSize)
	}
	page := store.Page{Size: req.PageSize, Token: req.PageToken}
	runs, next, err := ar.ListRunsOf(ctx, f, page)
	if err != nil {
		return nil, h.fail(ctx, err)
	}
	tasks, cut, err := h.listedTasks(ctx, runs, req)
	if err != nil {
		return nil, err
	}
	if cut < len(runs) {
		// The page is cut where the artifacts fill a response: the next
		// one starts after the last task it holds.
		page.Size = cut
		if _, next, err = ar.ListRunsOf(ctx, f, page); err != nil {
			return nil, h.fail(ctx, err)
		}
	}
	total := len(tasks)
	if next != "" || req.PageToken != "" {
		if total, err = countRuns(ctx, ar, f); err != nil {
			return nil, h.fail(ctx, err)
		}
	}
	return &a2a.ListTasksResponse{Tasks: tasks, NextPageToken: next, PageSize: len(tasks), TotalSize: total}, nil
}

// runLister lists runs a page at a time (an app's runner).
type runLister interface {
	ListRunsOf(ctx context.Context, f store.RunFilter, p store.Page) ([]*agentrunnerv1.Run, string, error)
}

// countRuns counts the runs f matches, all pages: ListTasks' totalSize
// is the number of tasks before pagination, not the page's. It reads
// every matching run record, a store page at a time, so it is paid only
// when there is more than one page.
func countRuns(ctx context.Context, ar runLister, f store.RunFilter) (int, error) {
	n := 0
	page := store.Page{Size: store.MaxPageSize}
	for {
		runs, next, err := ar.ListRunsOf(ctx, f, page)
		if err != nil {
			return 0, err
		}
		n += len(runs)
		if next == "" {
			return n, nil
		}
		page.Token = next
	}
}

// listedTasks builds the tasks of runs, as far as their artifacts (when
// the request wants them) fit in one response: it returns how many runs
// the tasks stand for. The first task alone may not pass the bound.
func (h *Handler) listedTasks(ctx context.Context, runs []*agentrunnerv1.Run, req *a2a.ListTasksRequest) ([]*a2a.Task, int, error) {
	tasks := make([]*a2a.Task, 0, len(runs))
	left := h.responseBytes()
	for i, run := range runs {
		task := &a2a.Task{ID: a2a.TaskID(run.GetRunId()), ContextID: run.GetSessionId(), Status: statusOf(run, nil)}
		if req.IncludeArtifacts {
			full, n, err := h.taskOf(ctx, run, left)
			var large *taskTooLarge
			if errors.As(err, &large) && i > 0 {
				return tasks, i, nil
			}
			if err != nil {
				return nil, 0, h.fail(ctx, err)
			}
			task, left = withHistory(full, req.HistoryLength), left-n
		}
		tasks = append(tasks, task)
	}
	return tasks, len(runs), nil
}

// Push notifications are not offered (the card says so).

func (h *Handler) GetTaskPushConfig(context.Context, *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (h *Handler) ListTaskPushConfigs(context.Context, *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (h *Handler) CreateTaskPushConfig(context.Context, *a2a.PushConfig) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (h *Handler) DeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigRequest) error {
	return a2a.ErrPushNotificationNotSupported
}

// GetExtendedAgentCard is not offered: the public card says everything.
func (h *Handler) GetExtendedAgentCard(context.Context, *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return nil, a2a.ErrExtendedCardNotConfigured
}
