package front

import (
	"context"

	"google.golang.org/protobuf/proto"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

func (d *Desk) CreateSession(ctx context.Context, req *servicev1.CreateSessionRequest) (*servicev1.CreateSessionResponse, error) {
	k, err := validateCreateSession(req)
	if err != nil {
		return nil, err
	}
	sess, err := d.store.CreateSession(ctx, k, req.GetState())
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.CreateSessionResponse{Session: sess}, nil
}

func (d *Desk) GetSession(ctx context.Context, req *servicev1.GetSessionRequest) (*servicev1.GetSessionResponse, error) {
	k, err := validateGetSession(req)
	if err != nil {
		return nil, err
	}
	after, err := afterTime(req.GetAfterTime())
	if err != nil {
		return nil, err
	}
	opts := store.GetOptions{
		NumRecentEvents: int(req.GetNumRecentEvents()),
		AfterSequence:   req.GetAfterSequence(),
		AfterTime:       after,
		MaxBytes:        d.maxMsg - responseSlack,
	}
	// At most MaxEventsPerCall events, the most recent; omitted_events
	// counts the others the request selects.
	bounded := opts
	if bounded.NumRecentEvents <= 0 || bounded.NumRecentEvents > d.limits.MaxEventsPerCall {
		bounded.NumRecentEvents = d.limits.MaxEventsPerCall
	}
	sess, events, err := d.store.GetSession(ctx, k, bounded)
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	total, err := d.selected(ctx, k, sess, events, opts)
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	// The session's merged state shares the message with the events:
	// when both do not fit, the oldest events go.
	room := d.maxMsg - responseSlack - proto.Size(sess)
	size := 0
	for _, ev := range events {
		size += store.ItemBytes(proto.Size(ev))
	}
	for len(events) > 0 && size > room {
		size -= store.ItemBytes(proto.Size(events[0]))
		events = events[1:]
	}
	return &servicev1.GetSessionResponse{Session: sess, Events: events, OmittedEvents: total - uint64(len(events))}, nil
}

// selected is how many events opts selects of sess, whose events are
// numbered 1..last_sequence without gaps, given the events the store
// returned for opts (the newest selected ones that fit). By sequence
// alone that is arithmetic. With a time filter the selected events left
// out, older than the first returned (or all, when none was), are
// counted by paging through them: a cost only a response cut short by
// its size pays, in pages bounded like any listing's. Events never
// change once appended, so the reads agree up to last_sequence.
func (d *Desk) selected(ctx context.Context, k store.SessionKey, sess *agentrunnerv1.Session, events []*agentrunnerv1.Event, opts store.GetOptions) (uint64, error) {
	last := sess.GetLastSequence()
	n := last - min(opts.AfterSequence, last)
	if opts.NumRecentEvents > 0 {
		n = min(n, uint64(opts.NumRecentEvents))
	}
	if opts.AfterTime == nil {
		return n, nil
	}
	kept := uint64(len(events))
	before := last + 1 // the first event returned, or past the last
	if kept > 0 {
		before = events[0].GetSequence()
	}
	// num_recent_events bounds how many of them count.
	room := n - min(kept, n)
	var left uint64
	page := store.Page{Size: store.MaxPageSize, MaxBytes: d.maxMsg - responseSlack}
	for left < room {
		evs, next, err := d.store.ListEvents(ctx, k, opts.Filter(), page)
		if err != nil {
			return 0, err
		}
		for _, ev := range evs {
			if ev.GetSequence() >= before || left == room {
				return kept + left, nil
			}
			left++
		}
		if next == "" {
			break
		}
		page.Token = next
	}
	return kept + left, nil
}

func (d *Desk) ListSessions(ctx context.Context, req *servicev1.ListSessionsRequest) (*servicev1.ListSessionsResponse, error) {
	if err := validateListSessions(req); err != nil {
		return nil, err
	}
	if err := d.checkPage(req); err != nil {
		return nil, err
	}
	sessions, next, err := d.store.ListSessions(ctx, req.GetAppName(), req.GetUserId(), page(req, d.maxMsg))
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.ListSessionsResponse{Sessions: sessions, NextPageToken: next}, nil
}

func (d *Desk) DeleteSession(ctx context.Context, req *servicev1.DeleteSessionRequest) (*servicev1.DeleteSessionResponse, error) {
	k, err := sessionKey(req)
	if err != nil {
		return nil, err
	}
	if err := d.store.DeleteSession(ctx, k); err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.DeleteSessionResponse{}, nil
}

func (d *Desk) AppendEvent(ctx context.Context, req *servicev1.AppendEventRequest) (*servicev1.AppendEventResponse, error) {
	k, err := validateAppendEvent(req)
	if err == nil {
		err = d.checkContentLimits("event.content", req.GetEvent().GetContent())
	}
	if err != nil {
		return nil, err
	}
	// An event id the session holds already is a retry (the same
	// content: the stored event is the answer) or a conflict.
	ev, _, err := d.store.AppendEventOnce(ctx, k, req.GetEvent())
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.AppendEventResponse{Event: ev}, nil
}

func (d *Desk) ListEvents(ctx context.Context, req *servicev1.ListEventsRequest) (*servicev1.ListEventsResponse, error) {
	k, err := validateListEvents(req)
	if err != nil {
		return nil, err
	}
	if err := d.checkPage(req); err != nil {
		return nil, err
	}
	after, err := afterTime(req.GetAfterTime())
	if err != nil {
		return nil, err
	}
	f := store.EventFilter{AfterSequence: req.GetAfterSequence(), AfterTime: after}
	if q := queryOf(req); q.set() {
		if err := q.validate(); err != nil {
			return nil, err
		}
		return d.searchEvents(ctx, k, req, q, f)
	}
	events, next, err := d.store.ListEvents(ctx, k, f, page(req, d.maxMsg))
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.ListEventsResponse{Events: events, NextPageToken: next}, nil
}

func (d *Desk) ListToolCalls(ctx context.Context, req *servicev1.ListToolCallsRequest) (*servicev1.ListToolCallsResponse, error) {
	k, err := sessionKey(req)
	if err != nil {
		return nil, err
	}
	calls, err := d.store.ListToolCalls(ctx, k)
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.ListToolCallsResponse{ToolCalls: calls}, nil
}
