package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/eval"
)

// saveSession writes a session's turns as an eval case into --out: each
// user message with text starts a turn, and what the agents did until the
// next one (their tool calls, their final response) is what the case
// expects. Its session_input names the app and user but holds no state:
// the state the session started from is not kept apart from what its runs
// changed; add it to the file by hand if the agent needs it.
func (ec evalClient) saveSession(ctx context.Context) error {
	events, err := ec.sessionEvents(ctx)
	if err != nil {
		return err
	}
	id := ec.f.evalID
	if id == "" {
		id = ec.f.session
	}
	c := eval.EvalCase{EvalID: id, Conversation: turnsOf(events),
		SessionInput: &eval.SessionInput{AppName: ec.f.app, UserID: ec.f.user}}
	if len(c.Conversation) == 0 {
		return fmt.Errorf("session %s has no user message with text", ec.f.session)
	}
	set, err := readOrNewEvalSet(ec.f.out)
	if err != nil {
		return err
	}
	for _, old := range set.EvalCases {
		if old.EvalID == c.EvalID {
			return fmt.Errorf("%s already has a case %q (choose another with --eval-id)", ec.f.out, c.EvalID)
		}
	}
	set.EvalCases = append(set.EvalCases, c)
	b, err := json.MarshalIndent(set, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(ec.f.out, append(b, '\n')); err != nil {
		return err
	}
	fmt.Fprintf(ec.out, "saved session %s as case %q (%d turns) in %s\n", ec.f.session, c.EvalID, len(c.Conversation), ec.f.out)
	return nil
}

func (ec evalClient) sessionEvents(ctx context.Context) ([]*agentrunnerv1.Event, error) {
	var events []*agentrunnerv1.Event
	token := ""
	for range 10000 {
		resp, err := ec.sessions.ListEvents(ctx, &servicev1.ListEventsRequest{
			AppName: ec.f.app, UserId: ec.f.user, SessionId: ec.f.session, PageSize: 1000, PageToken: token,
		})
		if err != nil {
			return nil, describeRPC(err)
		}
		events = append(events, resp.GetEvents()...)
		if token = resp.GetNextPageToken(); token == "" {
			return events, nil
		}
	}
	return nil, errors.New("session has too many pages of events")
}

// turnsOf splits events into turns at each user message with text.
func turnsOf(events []*agentrunnerv1.Event) []eval.Invocation {
	var out []eval.Invocation
	var user *eval.Content
	var since []*agentrunnerv1.Event
	flush := func() {
		if user != nil {
			inv := eval.ActualInvocation(user, since)
			inv.InvocationID = ""
			out = append(out, inv)
		}
	}
	for _, ev := range events {
		if ev.GetAuthor() == "user" && !ev.GetPartial() {
			if c := eval.ContentFromProto(ev.GetContent()); c.Text() != "" {
				flush()
				user, since = &eval.Content{Role: "user", Parts: []eval.Part{{Text: c.Text()}}}, nil
				continue
			}
		}
		since = append(since, ev)
	}
	flush()
	for i := range out {
		for j, tc := range out[i].IntermediateData.ToolUses {
			out[i].IntermediateData.ToolUses[j] = eval.FunctionCall{Name: tc.Name, Args: tc.Args}
		}
	}
	return out
}

// readOrNewEvalSet reads the eval set at path, or starts one named after
// the file when there is none.
func readOrNewEvalSet(path string) (*eval.EvalSet, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		id := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".json"), ".evalset")
		return &eval.EvalSet{EvalSetID: id, EvalCases: []eval.EvalCase{}}, nil
	} else if err != nil {
		return nil, err
	}
	return eval.Load(filepath.Base(path), b)
}

// writeFileAtomic replaces path with data, so that a crash leaves the old
// file or the new one, never half of one.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
