package server

import (
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"
)

// Searching a session, a state key's history and the list of users are
// the desk's, over each store's paging: both stores are exercised, since
// they rest on each store's order.

func TestSearchEventsBolt(t *testing.T)   { testSearchEvents(t, newEnv(t)) }
func TestSearchEventsPG(t *testing.T)     { testSearchEvents(t, newPGEnv(t)) }
func TestStateHistoryBolt(t *testing.T)   { testStateHistory(t, newEnv(t)) }
func TestStateHistoryPG(t *testing.T)     { testStateHistory(t, newPGEnv(t)) }
func TestListUsersBolt(t *testing.T)      { testListUsers(t, newEnv(t)) }
func TestListUsersPG(t *testing.T)        { testListUsers(t, newPGEnv(t)) }
func TestListUsersAdminOnly(t *testing.T) { testListUsersAdminOnly(t) }

func appendAll(t *testing.T, e *env, k [3]string, evs ...*agentrunnerv1.Event) {
	t.Helper()
	if _, err := e.sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: k[0], UserId: k[1], SessionId: k[2]}); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if _, err := e.sessions.AppendEvent(t.Context(), &servicev1.AppendEventRequest{AppName: k[0], UserId: k[1], SessionId: k[2], Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
}

func callPart(id, name string) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: name}}}
}

func responsePart(id, name string) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name, Response: &structpb.Struct{}}}}
}

func seqs(evs []*agentrunnerv1.Event) []uint64 {
	var out []uint64
	for _, ev := range evs {
		out = append(out, ev.GetSequence())
	}
	return out
}

func testSearchEvents(t *testing.T, e *env) {
	k := [3]string{"app", "u", "s"}
	weather := say("Weather in PARIS is sunny")
	weather.Author, weather.InvocationId = "helper", "run-2"
	weather.Content.Parts = append(weather.Content.Parts, callPart("c1", "get_weather"))
	answer := &agentrunnerv1.Event{Author: "helper", InvocationId: "run-2", Content: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{responsePart("c1", "get_weather")}}}
	failed := &agentrunnerv1.Event{Author: "helper", InvocationId: "run-2", ErrorCode: "MODEL_ERROR", ErrorMessage: "Quota exceeded"}
	appendAll(t, e, k,
		&agentrunnerv1.Event{Author: "user", InvocationId: "run-1", Content: text("hello, what is the weather in Paris?")}, // 1
		weather, answer, failed, // 2, 3, 4
		&agentrunnerv1.Event{Author: "user", InvocationId: "run-3", Content: text("thanks")}, // 5
	)
	list := func(r *servicev1.ListEventsRequest) *servicev1.ListEventsResponse {
		t.Helper()
		r.AppName, r.UserId, r.SessionId = k[0], k[1], k[2]
		resp, err := e.sessions.ListEvents(t.Context(), r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for name, c := range map[string]struct {
		req  *servicev1.ListEventsRequest
		want []uint64
	}{
		"text, any case":     {&servicev1.ListEventsRequest{Query: "paris"}, []uint64{1, 2}},
		"error message text": {&servicev1.ListEventsRequest{Query: "quota"}, []uint64{4}},
		"function name":      {&servicev1.ListEventsRequest{FunctionName: "get_weather"}, []uint64{2, 3}},
		"errors only":        {&servicev1.ListEventsRequest{ErrorsOnly: true}, []uint64{4}},
		"author":             {&servicev1.ListEventsRequest{Author: "user"}, []uint64{1, 5}},
		"run":                {&servicev1.ListEventsRequest{RunId: "run-2"}, []uint64{2, 3, 4}},
		"run and text":       {&servicev1.ListEventsRequest{RunId: "run-2", Query: "sunny"}, []uint64{2}},
		"after a sequence":   {&servicev1.ListEventsRequest{Author: "user", AfterSequence: 1}, []uint64{5}},
		"nothing":            {&servicev1.ListEventsRequest{Query: "snow"}, nil},
	} {
		got := list(c.req)
		if s := seqs(got.GetEvents()); !equalSeqs(s, c.want) || got.GetNextPageToken() != "" {
			t.Errorf("%s: events %v (token %q), want %v", name, s, got.GetNextPageToken(), c.want)
		}
	}
	// Paged: one match a page, each token going on from the last.
	var got []uint64
	tok := ""
	for i := 0; i < 5; i++ {
		r := list(&servicev1.ListEventsRequest{RunId: "run-2", PageSize: 1, PageToken: tok})
		got = append(got, seqs(r.GetEvents())...)
		if tok = r.GetNextPageToken(); tok == "" {
			break
		}
	}
	if !equalSeqs(got, []uint64{2, 3, 4}) || tok != "" {
		t.Errorf("paged by run: %v (token %q)", got, tok)
	}
	first := list(&servicev1.ListEventsRequest{RunId: "run-2", PageSize: 1})
	_, err := e.sessions.ListEvents(t.Context(), &servicev1.ListEventsRequest{AppName: k[0], UserId: k[1], SessionId: k[2], Author: "user", PageToken: first.GetNextPageToken()})
	wantCode(t, err, codes.InvalidArgument, "page_token")
	_, err = e.sessions.ListEvents(t.Context(), &servicev1.ListEventsRequest{AppName: k[0], UserId: k[1], SessionId: "missing", Query: "x"})
	wantCode(t, err, codes.NotFound, "")
}

func equalSeqs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func delta(author string, kv map[string]any) *agentrunnerv1.Event {
	st, err := structpb.NewStruct(kv)
	if err != nil {
		panic(err)
	}
	return &agentrunnerv1.Event{Author: author, InvocationId: "r", Actions: &agentrunnerv1.EventActions{StateDelta: st}}
}

func testStateHistory(t *testing.T, e *env) {
	k := [3]string{"app", "u", "s"}
	appendAll(t, e, k,
		delta("user", map[string]any{"color": "red"}),                   // 1
		delta("agent", map[string]any{"size": 3}),                       // 2
		delta("agent", map[string]any{"color": "blue", "size": 4}),      // 3
		delta("user", map[string]any{"color": nil}),                     // 4: deleted
		delta("agent", map[string]any{"color": map[string]any{"r": 1}}), // 5
	)
	type change struct {
		seq      uint64
		old, new string // JSON; "" for no value
	}
	asJSON := func(v *structpb.Value) string {
		if v == nil {
			return ""
		}
		b, _ := v.MarshalJSON()
		return string(b)
	}
	want := []change{{1, "", `"red"`}, {3, `"red"`, `"blue"`}, {4, `"blue"`, `null`}, {5, "", `{"r":1}`}}
	for _, size := range []int32{0, 1, 3} {
		var got []change
		tok := ""
		for i := 0; i < 10; i++ {
			resp, err := e.sessions.GetStateHistory(t.Context(), &servicev1.GetStateHistoryRequest{AppName: k[0], UserId: k[1], SessionId: k[2], Key: "color", PageSize: size, PageToken: tok})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range resp.GetChanges() {
				got = append(got, change{c.GetSequence(), asJSON(c.GetOldValue()), asJSON(c.GetNewValue())})
			}
			if tok = resp.GetNextPageToken(); tok == "" {
				break
			}
		}
		if len(got) != len(want) {
			t.Fatalf("page size %d: history %v, want %v", size, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("page size %d: change %d = %+v, want %+v", size, i, got[i], want[i])
			}
		}
	}
	_, err := e.sessions.GetStateHistory(t.Context(), &servicev1.GetStateHistoryRequest{AppName: k[0], UserId: k[1], SessionId: k[2]})
	wantCode(t, err, codes.InvalidArgument, "key")
}

func testListUsers(t *testing.T, e *env) {
	for _, k := range [][3]string{{"app", "carol", "1"}, {"app", "amy", "1"}, {"app", "amy", "2"}, {"app", "bob", "x"}, {"other", "zed", "1"}} {
		appendAll(t, e, k)
	}
	type user struct {
		id string
		n  int64
	}
	for _, size := range []int32{0, 1, 2} {
		var got []user
		tok := ""
		for i := 0; i < 10; i++ {
			resp, err := e.sessions.ListUsers(t.Context(), &servicev1.ListUsersRequest{AppName: "app", PageSize: size, PageToken: tok})
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range resp.GetUsers() {
				if u.GetLastUpdateTime() == nil {
					t.Errorf("user %s has no last update time", u.GetUserId())
				}
				got = append(got, user{u.GetUserId(), u.GetSessionCount()})
			}
			if tok = resp.GetNextPageToken(); tok == "" {
				break
			}
		}
		want := []user{{"amy", 2}, {"bob", 1}, {"carol", 1}}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("page size %d: users %v, want %v", size, got, want)
		}
	}
	_, err := e.sessions.ListUsers(t.Context(), &servicev1.ListUsersRequest{AppName: "other", PageToken: "bm9wZQ"})
	wantCode(t, err, codes.InvalidArgument, "page_token")
}

// testListUsersAdminOnly: only an admin lists an app's users.
func testListUsersAdminOnly(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)), withAuth(t, matrixAuth))
	e.newFixture(t, "echo", "alice", "a")
	for _, who := range []string{"alice", "bob"} {
		_, err := e.sessions.ListUsers(as(t.Context(), who), &servicev1.ListUsersRequest{AppName: "echo"})
		wantCode(t, err, codes.PermissionDenied, "")
	}
	resp, err := e.sessions.ListUsers(as(t.Context(), "root"), &servicev1.ListUsersRequest{AppName: "echo"})
	if err != nil || len(resp.GetUsers()) != 1 || resp.GetUsers()[0].GetUserId() != "alice" {
		t.Errorf("ListUsers as root: %v, %v", resp.GetUsers(), err)
	}
}
