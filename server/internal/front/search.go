package front

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Searching is done here, over the stores' own paging, rather than in
// each store: both stores list a session's events in sequence order and
// a sequence-numbered position is all a search needs to go on from. The
// cost of a call is bounded by scanBudget events examined, whatever
// matches: a search that finds little over a long session returns short
// (or empty) pages with a token to continue, as the proto says.
const scanBudget = 5000

// maxSearchBytes bounds a search's text: it is compared against every
// event examined.
const maxSearchBytes = 1024

// eventQuery is a ListEvents request's filters.
type eventQuery struct {
	text, author, function, run string
	errorsOnly                  bool
}

func queryOf(r *servicev1.ListEventsRequest) eventQuery {
	return eventQuery{text: strings.ToLower(r.GetQuery()), author: r.GetAuthor(), function: r.GetFunctionName(), run: r.GetRunId(), errorsOnly: r.GetErrorsOnly()}
}

func (q eventQuery) set() bool {
	return q.text != "" || q.author != "" || q.function != "" || q.run != "" || q.errorsOnly
}

func (q eventQuery) validate() error {
	if err := checkText("query", q.text, false, maxSearchBytes); err != nil {
		return err
	}
	if err := checkText("author", q.author, false, maxIDBytes); err != nil {
		return err
	}
	if err := checkText("function_name", q.function, false, maxIDBytes); err != nil {
		return err
	}
	return checkOptionalID("run_id", q.run)
}

// digest names the filters in a page token, so that a token is not
// taken for a listing with other filters.
func (q eventQuery) digest() string {
	h := fnv.New64a()
	for _, s := range []string{q.text, q.author, q.function, q.run, strconv.FormatBool(q.errorsOnly)} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

func (q eventQuery) matches(ev *agentrunnerv1.Event) bool {
	switch {
	case q.author != "" && ev.GetAuthor() != q.author,
		q.run != "" && ev.GetInvocationId() != q.run,
		q.errorsOnly && ev.GetErrorCode() == "" && ev.GetErrorMessage() == "":
		return false
	}
	if q.function != "" && !callsFunction(ev, q.function) {
		return false
	}
	return q.text == "" || holdsText(ev, q.text)
}

func callsFunction(ev *agentrunnerv1.Event, name string) bool {
	for _, p := range ev.GetContent().GetParts() {
		if p.GetFunctionCall().GetName() == name || p.GetFunctionResponse().GetName() == name {
			return true
		}
	}
	return false
}

// holdsText reports whether an event's text parts or error message hold
// lower, a lowercased query.
func holdsText(ev *agentrunnerv1.Event, lower string) bool {
	if strings.Contains(strings.ToLower(ev.GetErrorMessage()), lower) {
		return true
	}
	for _, p := range ev.GetContent().GetParts() {
		if t := p.GetText(); t != "" && strings.Contains(strings.ToLower(t), lower) {
			return true
		}
	}
	return false
}

// scanToken is the page token of a scan: the sequence examined last,
// and a digest of what the scan looks for.
func scanToken(kind string, seq uint64, digest string) string {
	return kind + "." + strconv.FormatUint(seq, 10) + "." + digest
}

func parseScanToken(tok, kind, digest string) (uint64, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] != kind {
		return 0, invalid("page_token", "not a token of this listing")
	}
	if parts[2] != digest {
		return 0, invalid("page_token", "a token of a listing with other filters")
	}
	seq, err := strconv.ParseUint(parts[1], 10, 64)
	if err != nil {
		return 0, invalid("page_token", "malformed")
	}
	return seq, nil
}

// searchEvents is a ListEvents with filters: from the request's start,
// the events that match, at most page_size of them and as many as fit a
// response, examining at most scanBudget events.
func (d *Desk) searchEvents(ctx context.Context, k store.SessionKey, req *servicev1.ListEventsRequest, q eventQuery, f store.EventFilter) (*servicev1.ListEventsResponse, error) {
	digest := q.digest()
	if tok := req.GetPageToken(); tok != "" {
		seq, err := parseScanToken(tok, "e1", digest)
		if err != nil {
			return nil, err
		}
		f.AfterSequence = seq
	}
	want := store.Page{Size: int(req.GetPageSize())}.Limit()
	room := d.maxMsg - responseSlack
	var out []*agentrunnerv1.Event
	size, examined := 0, 0
	for examined < scanBudget {
		evs, next, err := d.store.ListEvents(ctx, k, f, store.Page{Size: min(store.MaxPageSize, scanBudget-examined), MaxBytes: room})
		if err != nil {
			return nil, d.toStatus(ctx, err)
		}
		for _, ev := range evs {
			n := store.ItemBytes(proto.Size(ev))
			if q.matches(ev) {
				if len(out) > 0 && size+n > room {
					return &servicev1.ListEventsResponse{Events: out, NextPageToken: scanToken("e1", f.AfterSequence, digest)}, nil
				}
				out, size = append(out, ev), size+n
			}
			f.AfterSequence = ev.GetSequence()
			examined++
			if len(out) == want {
				return &servicev1.ListEventsResponse{Events: out, NextPageToken: scanToken("e1", f.AfterSequence, digest)}, nil
			}
		}
		if next == "" || len(evs) == 0 {
			return &servicev1.ListEventsResponse{Events: out}, nil
		}
	}
	return &servicev1.ListEventsResponse{Events: out, NextPageToken: scanToken("e1", f.AfterSequence, digest)}, nil
}

func (d *Desk) GetStateHistory(ctx context.Context, req *servicev1.GetStateHistoryRequest) (*servicev1.GetStateHistoryResponse, error) {
	k, err := sessionKey(req)
	if err != nil {
		return nil, err
	}
	key := req.GetKey()
	if err := checkText("key", key, true, maxFilenameBytes); err != nil {
		return nil, err
	}
	if err := checkPageSize(req.GetPageSize()); err != nil {
		return nil, err
	}
	if err := d.checkPage(req); err != nil {
		return nil, err
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	digest := strconv.FormatUint(h.Sum64(), 36)
	var from, changed uint64
	var prev *structpb.Value
	if tok := req.GetPageToken(); tok != "" {
		// "<last change>-<digest>" in the digest's place: the value before
		// the next change is the one that change set.
		c, dg, _ := strings.Cut(tok[strings.LastIndex(tok, ".")+1:], "-")
		tok = tok[:strings.LastIndex(tok, ".")+1] + dg
		if from, err = parseScanToken(tok, "h1", digest); err != nil {
			return nil, err
		}
		if changed, err = strconv.ParseUint(c, 10, 64); err != nil || changed > from {
			return nil, invalid("page_token", "malformed")
		}
		if prev, err = d.valueAt(ctx, k, key, changed); err != nil {
			return nil, err
		}
	}
	return d.scanHistory(ctx, k, key, digest, historyPos{from, changed}, prev, store.Page{Size: int(req.GetPageSize())}.Limit())
}

// valueAt is the value key took at event seq (a change the previous
// page of the history listed last; the token names it), nil when seq is
// 0 (no change yet) or the change deleted the key.
func (d *Desk) valueAt(ctx context.Context, k store.SessionKey, key string, seq uint64) (*structpb.Value, error) {
	if seq == 0 {
		return nil, nil
	}
	evs, _, err := d.store.ListEvents(ctx, k, store.EventFilter{AfterSequence: seq - 1}, store.Page{Size: 1})
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	if len(evs) == 0 || evs[0].GetSequence() != seq {
		return nil, invalid("page_token", "names no event of the session")
	}
	return live(evs[0].GetActions().GetStateDelta().GetFields()[key]), nil
}

// live is a state value as the key holds it: a null (a deletion) is no
// value.
func live(v *structpb.Value) *structpb.Value {
	if _, null := v.GetKind().(*structpb.Value_NullValue); null {
		return nil
	}
	return v
}

// historyPos is where a history scan is: the event examined last and
// the last change it found.
type historyPos struct{ examined, changed uint64 }

func (p historyPos) token(digest string) string {
	return scanToken("h1", p.examined, strconv.FormatUint(p.changed, 10)+"-"+digest)
}

func (d *Desk) scanHistory(ctx context.Context, k store.SessionKey, key, digest string, pos historyPos, prev *structpb.Value, want int) (*servicev1.GetStateHistoryResponse, error) {
	resp := &servicev1.GetStateHistoryResponse{}
	f := store.EventFilter{AfterSequence: pos.examined}
	for examined := 0; examined < scanBudget; {
		evs, next, err := d.store.ListEvents(ctx, k, f, store.Page{Size: min(store.MaxPageSize, scanBudget-examined), MaxBytes: d.maxMsg - responseSlack})
		if err != nil {
			return nil, d.toStatus(ctx, err)
		}
		for _, ev := range evs {
			f.AfterSequence = ev.GetSequence()
			examined++
			v, ok := ev.GetActions().GetStateDelta().GetFields()[key]
			if !ok {
				continue
			}
			resp.Changes = append(resp.Changes, &servicev1.StateChange{
				Sequence: ev.GetSequence(), EventId: ev.GetId(), Author: ev.GetAuthor(), InvocationId: ev.GetInvocationId(),
				Time: ev.GetTimestamp(), OldValue: prev, NewValue: v,
			})
			prev = live(v)
			pos.changed = ev.GetSequence()
			if len(resp.Changes) == want {
				pos.examined = f.AfterSequence
				resp.NextPageToken = pos.token(digest)
				return resp, nil
			}
		}
		if next == "" || len(evs) == 0 {
			return resp, nil
		}
	}
	pos.examined = f.AfterSequence
	resp.NextPageToken = pos.token(digest)
	return resp, nil
}

// usersToken continues a ListUsers: the store's token of the page where
// the next user starts, and the last user listed, whose sessions that
// page may still hold.
type usersToken struct {
	App   string `json:"a"`
	Store string `json:"t"`
	After string `json:"u"`
}

func (d *Desk) ListUsers(ctx context.Context, req *servicev1.ListUsersRequest) (*servicev1.ListUsersResponse, error) {
	app := req.GetAppName()
	if err := checkID("app_name", app); err != nil {
		return nil, err
	}
	if err := checkPageSize(req.GetPageSize()); err != nil {
		return nil, err
	}
	if err := d.checkPage(req); err != nil {
		return nil, err
	}
	var tok usersToken
	if s := req.GetPageToken(); s != "" {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || json.Unmarshal(b, &tok) != nil || tok.App != app {
			return nil, invalid("page_token", "not a token of this listing")
		}
	}
	return d.scanUsers(ctx, app, tok, store.Page{Size: int(req.GetPageSize())}.Limit())
}

// scanUsers groups an app's sessions, which every store lists ordered by
// user, into users. A user's sessions are all counted in one call, so a
// call reads the sessions of the users it returns and at most one page
// more.
func (d *Desk) scanUsers(ctx context.Context, app string, tok usersToken, want int) (*servicev1.ListUsersResponse, error) {
	resp := &servicev1.ListUsersResponse{}
	var cur *servicev1.UserSummary
	pageTok := tok.Store
	for {
		sessions, next, err := d.store.ListSessions(ctx, app, "", store.Page{Size: store.MaxPageSize, Token: pageTok, MaxBytes: d.maxMsg - responseSlack})
		if err != nil {
			return nil, d.toStatus(ctx, err)
		}
		for _, s := range sessions {
			if tok.After != "" && s.GetUserId() <= tok.After {
				continue
			}
			if cur != nil && cur.UserId != s.GetUserId() {
				resp.Users = append(resp.Users, cur)
				if len(resp.Users) == want {
					b, _ := json.Marshal(usersToken{App: app, Store: pageTok, After: cur.UserId})
					resp.NextPageToken = base64.RawURLEncoding.EncodeToString(b)
					return resp, nil
				}
				cur = nil
			}
			if cur == nil {
				cur = &servicev1.UserSummary{UserId: s.GetUserId()}
			}
			cur.SessionCount++
			if t := s.GetUpdateTime(); t != nil && (cur.LastUpdateTime == nil || t.AsTime().After(cur.LastUpdateTime.AsTime())) {
				cur.LastUpdateTime = t
			}
		}
		if next == "" || len(sessions) == 0 {
			break
		}
		pageTok = next
	}
	if cur != nil {
		resp.Users = append(resp.Users, cur)
	}
	return resp, nil
}
