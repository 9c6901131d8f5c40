package front

import (
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Limits on identifiers. Ids become parts of storage keys and of log lines,
// so they are bounded and must be text.
const (
	maxIDBytes       = 128
	maxFilenameBytes = 1024
)

// invalid returns an InvalidArgument status whose message starts with the
// field, and which carries a BadRequest detail so that clients can point at
// the field without parsing the message.
func invalid(field, format string, args ...any) error {
	desc := fmt.Sprintf(format, args...)
	st := status.New(codes.InvalidArgument, field+": "+desc)
	if d, err := st.WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: desc}},
	}); err == nil {
		st = d
	}
	return st.Err()
}

// checkText checks a bounded UTF-8 string field; required fields must not be
// empty.
func checkText(field, v string, required bool, max int) error {
	switch {
	case v == "" && required:
		return invalid(field, "required")
	case len(v) > max:
		return invalid(field, "%d bytes, longer than the limit of %d", len(v), max)
	case !utf8.ValidString(v):
		return invalid(field, "not valid UTF-8")
	}
	if r, ok := controlRune(v); ok {
		// Ids and names reach logs and terminals, where NUL, ESC or a
		// newline would forge or garble lines.
		return invalid(field, "contains the control character U+%04X", r)
	}
	return nil
}

// controlRune returns the first control character of v, if any.
func controlRune(v string) (rune, bool) {
	for _, r := range v {
		if unicode.IsControl(r) {
			return r, true
		}
	}
	return 0, false
}

// checkStateKeys checks the keys of a state map: they are names, stored as
// keys and shown in logs, so they follow the rules of ids (any length a
// key may have, though).
func checkStateKeys(field string, st *structpb.Struct) error {
	for key := range st.GetFields() {
		if err := checkText(field, key, true, maxFilenameBytes); err != nil {
			return invalid(field, "key %q: %s", key, status.Convert(err).Message())
		}
	}
	return nil
}

// checkTimestamp refuses a timestamp protobuf cannot represent: it would be
// stored, and every JSON reader of the session would then fail.
func checkTimestamp(field string, ts *timestamppb.Timestamp) error {
	if ts == nil {
		return nil
	}
	if err := ts.CheckValid(); err != nil {
		return invalid(field, "%v", err)
	}
	return nil
}

func checkID(field, v string) error { return checkText(field, v, true, maxIDBytes) }

func checkOptionalID(field, v string) error { return checkText(field, v, false, maxIDBytes) }

func checkFilename(v string) error { return checkText("filename", v, true, maxFilenameBytes) }

func checkPageSize(n int32) error {
	if n < 0 {
		return invalid("page_size", "must not be negative")
	}
	return nil
}

// keyed is every request that addresses one session.
type keyed interface {
	GetAppName() string
	GetUserId() string
	GetSessionId() string
}

// sessionKey validates and returns the session a request addresses.
func sessionKey(r keyed) (store.SessionKey, error) {
	k := store.SessionKey{App: r.GetAppName(), User: r.GetUserId(), Session: r.GetSessionId()}
	if err := checkID("app_name", k.App); err != nil {
		return k, err
	}
	if err := checkID("user_id", k.User); err != nil {
		return k, err
	}
	if err := checkID("session_id", k.Session); err != nil {
		return k, err
	}
	return k, nil
}

// artifactKey validates and returns the key an artifact request
// addresses, and its filename when named (a listing has none):
// session_id is optional for "user:" names and listings, whose artifacts
// belong to the user (store.ArtifactKey), and required for any other
// name.
func artifactKey(r keyed, filename string, named bool) (store.SessionKey, error) {
	k := store.SessionKey{App: r.GetAppName(), User: r.GetUserId(), Session: r.GetSessionId()}
	if err := checkID("app_name", k.App); err != nil {
		return k, err
	}
	if err := checkID("user_id", k.User); err != nil {
		return k, err
	}
	if named {
		if err := checkFilename(filename); err != nil {
			return k, err
		}
	}
	optional := !named || store.ScopeOf(filename) == store.ScopeUser
	if err := checkText("session_id", k.Session, !optional, maxIDBytes); err != nil {
		if k.Session == "" {
			return k, invalid("session_id", "required for a filename without the %q prefix", store.UserPrefix)
		}
		return k, err
	}
	return k, nil
}

// afterTime validates a request's after_time and returns it; nil when it
// is not set. The field's presence, not its value, decides: the zero
// instant (0001-01-01T00:00:00Z) filters like any other time.
func afterTime(ts *timestamppb.Timestamp) (*time.Time, error) {
	if ts == nil {
		return nil, nil
	}
	if err := checkTimestamp("after_time", ts); err != nil {
		return nil, err
	}
	t := ts.AsTime()
	return &t, nil
}

func validateCreateSession(r *servicev1.CreateSessionRequest) (store.SessionKey, error) {
	k := store.SessionKey{App: r.GetAppName(), User: r.GetUserId(), Session: r.GetSessionId()}
	if err := checkID("app_name", k.App); err != nil {
		return k, err
	}
	if err := checkID("user_id", k.User); err != nil {
		return k, err
	}
	// Empty asks the store to pick a random id.
	if err := checkOptionalID("session_id", k.Session); err != nil {
		return k, err
	}
	return k, checkStateKeys("state", r.GetState())
}

func validateGetSession(r *servicev1.GetSessionRequest) (store.SessionKey, error) {
	k, err := sessionKey(r)
	if err != nil {
		return k, err
	}
	if r.GetNumRecentEvents() < 0 {
		return k, invalid("num_recent_events", "must not be negative")
	}
	_, err = afterTime(r.GetAfterTime())
	return k, err
}

func validateListSessions(r *servicev1.ListSessionsRequest) error {
	if err := checkID("app_name", r.GetAppName()); err != nil {
		return err
	}
	// Empty lists every user of the app.
	if err := checkOptionalID("user_id", r.GetUserId()); err != nil {
		return err
	}
	return checkPageSize(r.GetPageSize())
}

// validateListRuns returns the runs a ListRuns request selects: app_name
// is required; user_id may be empty (every user) only without a
// session_id; every status must be one a run can have.
func validateListRuns(r *servicev1.ListRunsRequest) (store.RunFilter, error) {
	f := store.RunFilter{App: r.GetAppName(), User: r.GetUserId(), Session: r.GetSessionId(), Statuses: r.GetStatuses()}
	if err := checkID("app_name", f.App); err != nil {
		return f, err
	}
	if err := checkOptionalID("user_id", f.User); err != nil {
		return f, err
	}
	if err := checkOptionalID("session_id", f.Session); err != nil {
		return f, err
	}
	if f.Session != "" && f.User == "" {
		return f, invalid("user_id", "required with a session_id")
	}
	for i, st := range f.Statuses {
		if _, ok := agentrunnerv1.RunStatus_name[int32(st)]; !ok || st == agentrunnerv1.RunStatus_RUN_STATUS_UNSPECIFIED {
			return f, invalid(fmt.Sprintf("statuses[%d]", i), "%d is not a run status (RUN_STATUS_PENDING .. RUN_STATUS_INTERRUPTED)", int32(st))
		}
	}
	return f, checkPageSize(r.GetPageSize())
}

func validateAppendEvent(r *servicev1.AppendEventRequest) (store.SessionKey, error) {
	k, err := sessionKey(r)
	if err != nil {
		return k, err
	}
	ev := r.GetEvent()
	switch {
	case ev == nil:
		return k, invalid("event", "required")
	case ev.GetPartial():
		return k, invalid("event.partial", "partial events are streamed by Run, never stored")
	}
	if err := checkID("event.author", ev.GetAuthor()); err != nil {
		return k, err
	}
	if err := checkOptionalID("event.id", ev.GetId()); err != nil {
		return k, err
	}
	if err := checkTimestamp("event.timestamp", ev.GetTimestamp()); err != nil {
		return k, err
	}
	if err := checkStateKeys("event.actions.state_delta", ev.GetActions().GetStateDelta()); err != nil {
		return k, err
	}
	return k, checkContent("event.content", ev.GetContent(), false)
}

func validateListEvents(r *servicev1.ListEventsRequest) (store.SessionKey, error) {
	k, err := sessionKey(r)
	if err != nil {
		return k, err
	}
	if _, err := afterTime(r.GetAfterTime()); err != nil {
		return k, err
	}
	return k, checkPageSize(r.GetPageSize())
}

func validateSaveArtifact(r *servicev1.SaveArtifactRequest) (store.SessionKey, error) {
	k, err := artifactKey(r, r.GetFilename(), true)
	if err != nil {
		return k, err
	}
	switch r.GetArtifact().GetData().(type) {
	case *agentrunnerv1.Part_Text, *agentrunnerv1.Part_InlineData, *agentrunnerv1.Part_FileData:
		return k, nil
	case nil:
		if r.GetArtifact() == nil {
			return k, invalid("artifact", "required")
		}
		return k, invalid("artifact", "has no data; set text, inline_data or file_data")
	default:
		return k, invalid("artifact", "must hold text, inline_data or file_data")
	}
}

func validateLoadArtifact(r *servicev1.LoadArtifactRequest) (store.SessionKey, error) {
	k, err := artifactKey(r, r.GetFilename(), true)
	if err != nil {
		return k, err
	}
	if r.GetVersion() < 0 {
		return k, invalid("version", "must not be negative; 0 loads the latest")
	}
	return k, nil
}

func validateListArtifacts(r *servicev1.ListArtifactsRequest) (store.SessionKey, error) {
	k, err := artifactKey(r, "", false)
	if err != nil {
		return k, err
	}
	return k, checkPageSize(r.GetPageSize())
}

func validateListArtifactVersions(r *servicev1.ListArtifactVersionsRequest) (store.SessionKey, error) {
	k, err := artifactKey(r, r.GetFilename(), true)
	if err != nil {
		return k, err
	}
	return k, checkPageSize(r.GetPageSize())
}

func validateDeleteArtifact(r *servicev1.DeleteArtifactRequest) (store.SessionKey, error) {
	k, err := artifactKey(r, r.GetFilename(), true)
	if err != nil {
		return k, err
	}
	if r.GetVersion() < 0 {
		return k, invalid("version", "must not be negative; 0 deletes every version")
	}
	return k, nil
}

func validateRunRequest(r *servicev1.RunRequest) (store.SessionKey, error) {
	k, err := sessionKey(r)
	if err != nil {
		return k, err
	}
	if r.GetNewMessage() == nil {
		return k, invalid("new_message", "required")
	}
	if err := checkContent("new_message", r.GetNewMessage(), true); err != nil {
		return k, err
	}
	if err := checkOptionalID("request_id", r.GetRequestId()); err != nil {
		return k, err
	}
	if err := checkStateKeys("state_delta", r.GetStateDelta()); err != nil {
		return k, err
	}
	if _, ok := agentrunnerv1.MultitaskStrategy_name[int32(r.GetMultitaskStrategy())]; !ok {
		return k, invalid("multitask_strategy", "%d is not a MultitaskStrategy", r.GetMultitaskStrategy())
	}
	if _, ok := agentrunnerv1.OnDisconnect_name[int32(r.GetOnDisconnect())]; !ok {
		return k, invalid("on_disconnect", "%d is not an OnDisconnect", r.GetOnDisconnect())
	}
	return k, nil
}

// validateResumeRun checks a ResumeRun request.
func validateResumeRun(r *servicev1.ResumeRunRequest) error {
	if err := checkID("run_id", r.GetRunId()); err != nil {
		return err
	}
	if r.GetAnswers() != nil {
		if err := checkContent("answers", r.GetAnswers(), true); err != nil {
			return err
		}
		for i, p := range r.GetAnswers().GetParts() {
			if p.GetFunctionResponse().GetId() == "" {
				return invalid(fmt.Sprintf("answers.parts[%d]", i), "must be a function_response with the id of the call it answers")
			}
		}
	}
	for i, id := range r.GetRetryCallIds() {
		if err := checkID(fmt.Sprintf("retry_call_ids[%d]", i), id); err != nil {
			return err
		}
	}
	if _, ok := agentrunnerv1.OnDisconnect_name[int32(r.GetOnDisconnect())]; !ok {
		return invalid("on_disconnect", "%d is not an OnDisconnect", r.GetOnDisconnect())
	}
	return nil
}

// checkContent checks that every part of c carries data; when needParts is
// set, c must have at least one part.
func checkContent(field string, c *agentrunnerv1.Content, needParts bool) error {
	if needParts && len(c.GetParts()) == 0 {
		return invalid(field+".parts", "at least one part is required")
	}
	for i, p := range c.GetParts() {
		if p.GetData() == nil {
			return invalid(fmt.Sprintf("%s.parts[%d]", field, i), "has no data; set text, inline_data, file_data, function_call or function_response")
		}
	}
	return nil
}
