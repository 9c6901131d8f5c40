package providertest

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/retry"
)

// Provider is one provider's side of the shared tests: how to reach its
// real SDK through a Fake, and the replies of its wire format that the
// shared tests need. Every model it makes uses APIKey.
type Provider struct {
	// Name is how the provider's errors name it: `<Name> model "m"`.
	Name string
	// ModelName is the model the shared tests call.
	ModelName string
	// Start starts a fake of the provider's API answering with replies,
	// its SDK's environment made harmless.
	Start func(t *testing.T, replies ...Reply) *Fake
	// Model returns a model named name of the provider's real SDK,
	// pointed at f.
	Model func(t *testing.T, f *Fake, name string) model.Model
	// Error answers with HTTP status code in the API's error shape, the
	// API's error type for that code, and headers as name, value pairs.
	Error func(code int, message string, headers ...string) Reply
	// OK answers a unary call with the text "ok".
	OK Reply
}

// GenerateCase is an answer of the API and the responses Generate must
// make of it.
type GenerateCase struct {
	Name   string
	Stream bool
	Reply  Reply
	Want   []*model.Response
}

// RunGenerate runs each case through the provider's SDK; check, when
// set, checks the one request the SDK sent (its path and credentials,
// which only the provider knows).
func RunGenerate(t *testing.T, p Provider, cases []GenerateCase, check func(t *testing.T, r Request, stream bool)) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			fake := p.Start(t, tt.Reply)
			got := Collect(t, p.Model(t, fake, p.ModelName).Generate(t.Context(), HelloRequest(), tt.Stream))
			if d := DiffResponses(got, tt.Want); d != "" {
				t.Error(d)
			}
			if r := fake.Only(t); check != nil {
				check(t, r, tt.Stream)
			}
		})
	}
}

// ErrorCase is a failed call and the *model.Error it must end in.
type ErrorCase struct {
	Name         string
	Stream       bool
	Reply        Reply
	WantPartials int // partial responses before the error
	WantCode     string
	WantRetry    bool
	WantAfter    time.Duration
	WantText     string // in the error's text
}

// RunErrors checks that every way a call can fail comes back as a
// *model.Error with the stable code, retryable exactly when a later
// attempt may do better, naming the model and never showing the key.
func RunErrors(t *testing.T, p Provider, cases []ErrorCase) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			fake := p.Start(t, tt.Reply)
			got, err := CollectErr(p.Model(t, fake, p.ModelName).Generate(t.Context(), HelloRequest(), tt.Stream))
			if len(got) != tt.WantPartials {
				t.Errorf("got %d responses before the error, want %d", len(got), tt.WantPartials)
			}
			for _, r := range got {
				if !r.Partial {
					t.Errorf("complete response before the error: %s", ShowResponse(r))
				}
			}
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v (%T), want *model.Error", err, err)
			}
			if me.Code != tt.WantCode || me.Retryable != tt.WantRetry || me.RetryAfter != tt.WantAfter {
				t.Errorf("code %s retryable %v after %v, want %s %v %v (%v)", me.Code, me.Retryable, me.RetryAfter, tt.WantCode, tt.WantRetry, tt.WantAfter, err)
			}
			if named := p.Name + ` model "` + p.ModelName + `"`; !strings.Contains(err.Error(), named) || !strings.Contains(err.Error(), tt.WantText) {
				t.Errorf("error text %q, want it to name the model (%s) and contain %q", err, named, tt.WantText)
			}
			if strings.Contains(err.Error(), APIKey) {
				t.Errorf("error text %q shows the API key", err)
			}
		})
	}
}

// FaultCase is an injected fault and how the retry wrapper must end it.
type FaultCase struct {
	Name      string
	Stream    bool
	Timeout   time.Duration // the policy's CallTimeout, when set
	Replies   []Reply
	WantText  string // the answer, or "" for an in-band error
	WantCode  string
	WantCalls int
	MinWait   time.Duration // the first wait is at least this
}

// RunFaults runs the retry wrapper over the provider's real SDK against
// the fake: each fault ends as the retry package promises, retried into
// a success or an in-band error with the stable code.
func RunFaults(t *testing.T, p Provider, cases []FaultCase) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) { runFault(t, p, tt) })
	}
}

func runFault(t *testing.T, p Provider, tt FaultCase) {
	fake := p.Start(t, tt.Replies...)
	policy := FaultPolicy
	if tt.Timeout > 0 {
		policy.CallTimeout = tt.Timeout
	}
	clock := &Clock{}
	m := WithRetry(t, clock, policy, p.Model(t, fake, p.ModelName))
	got, err := CollectErr(m.Generate(t.Context(), HelloRequest(), tt.Stream))
	if err != nil || len(got) == 0 {
		t.Fatalf("Go error %v after %d responses; every fault must end in band", err, len(got))
	}
	last := got[len(got)-1]
	for _, r := range got[:len(got)-1] {
		if !r.Partial {
			t.Errorf("complete response before the last: %s", ShowResponse(r))
		}
	}
	if tt.WantText != "" && (TextOf(last) != tt.WantText || last.ErrorCode != "") {
		t.Errorf("last response %s, want the answer %q", ShowResponse(last), tt.WantText)
	}
	if tt.WantCode != "" && (last.ErrorCode != tt.WantCode || !last.TurnComplete || !strings.Contains(last.ErrorMessage, p.ModelName)) {
		t.Errorf("last response %s, want an in-band %s naming the model", ShowResponse(last), tt.WantCode)
	}
	if n := len(fake.Seen()); n != tt.WantCalls {
		t.Errorf("fake saw %d requests, want %d", n, tt.WantCalls)
	}
	if waits := clock.Waits(); tt.MinWait > 0 && (len(waits) == 0 || waits[0] < tt.MinWait) {
		t.Errorf("waits %v, want the first at least %v", waits, tt.MinWait)
	}
}

// FallbackAnswers checks that when the primary model is out of quota
// (exhausted answers every call), the fallback, another server and
// another model, answers: spare's answer, wantText from model version
// wantVersion.
func FallbackAnswers(t *testing.T, p Provider, exhausted, spare Reply, wantText, wantVersion string) {
	primaryAPI, spareAPI := p.Start(t, exhausted), p.Start(t, spare)
	primaryName, spareName := p.ModelName+"-primary", p.ModelName+"-spare"
	m := WithRetry(t, &Clock{}, FaultPolicy, p.Model(t, primaryAPI, primaryName), p.Model(t, spareAPI, spareName))
	got := Collect(t, m.Generate(t.Context(), HelloRequest(), false))
	if len(got) != 1 || TextOf(got[0]) != wantText || got[0].ModelVersion != wantVersion {
		t.Fatalf("got %v, want the spare's answer", got)
	}
	primarySeen, spareSeen := primaryAPI.Seen(), spareAPI.Seen()
	if len(primarySeen) != FaultPolicy.MaxAttempts || len(spareSeen) != 1 {
		t.Fatalf("requests: primary %d, spare %d; want %d and 1", len(primarySeen), len(spareSeen), FaultPolicy.MaxAttempts)
	}
	// The model is named in the body (OpenAI, Anthropic) or the path (Gemini).
	if r := spareSeen[0]; r.Body["model"] != spareName && !strings.Contains(r.Path, "/"+spareName+":") {
		t.Errorf("the spare was asked for model %v at %s, want %s", r.Body["model"], r.Path, spareName)
	}
}

// RetryAfterHeader checks that a Retry-After header, in seconds or as an
// HTTP date, on a 429 or a 503, is what the retry waits at least, and that
// one beyond the policy's time limit is not waited for (the call ends in
// band). The provider's own error classification must carry it too.
func RetryAfterHeader(t *testing.T, p Provider) {
	withHeader := func(code int, value func() string) Reply {
		return func(w http.ResponseWriter, r *http.Request) {
			p.Error(code, "slow down", "Retry-After", value())(w, r)
		}
	}
	date := func() string { return time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat) }
	seconds := func(s string) func() string { return func() string { return s } }
	tests := []retryAfterCase{
		{"429 Retry-After: 2", withHeader(429, seconds("2")), 2 * time.Second, 2, ""},
		{"503 Retry-After: HTTP date", withHeader(503, date), 3 * time.Second, 2, ""},
		{"429 Retry-After beyond the policy", withHeader(429, seconds("3600")), time.Hour, 1, model.CodeResourceExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runRetryAfter(t, p, tt) })
	}
}

type retryAfterCase struct {
	name      string
	first     Reply
	wantAfter time.Duration // at least
	wantCalls int
	wantCode  string
}

func runRetryAfter(t *testing.T, p Provider, tt retryAfterCase) {
	direct := p.Start(t, tt.first)
	_, err := CollectErr(p.Model(t, direct, p.ModelName).Generate(t.Context(), HelloRequest(), false))
	var me *model.Error
	if !errors.As(err, &me) || me.RetryAfter < tt.wantAfter {
		t.Fatalf("error %v, want a *model.Error with RetryAfter at least %v", err, tt.wantAfter)
	}

	fake := p.Start(t, tt.first, p.OK)
	policy := retry.Policy{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond, MaxBackoff: time.Second, MaxTotal: time.Minute}
	clock := &Clock{}
	m := WithRetry(t, clock, policy, p.Model(t, fake, p.ModelName))
	got, err := CollectErr(m.Generate(t.Context(), HelloRequest(), false))
	if err != nil || len(got) != 1 {
		t.Fatalf("got %v, %v; want one response", got, err)
	}
	if got[0].ErrorCode != tt.wantCode {
		t.Errorf("error code %q (%s), want %q", got[0].ErrorCode, got[0].ErrorMessage, tt.wantCode)
	}
	if n := len(fake.Seen()); n != tt.wantCalls {
		t.Errorf("fake saw %d requests, want %d", n, tt.wantCalls)
	}
	waits := clock.Waits()
	for _, w := range waits {
		if w > policy.MaxTotal {
			t.Errorf("waited %v, beyond the policy's %v", w, policy.MaxTotal)
		}
	}
	if tt.wantCalls == 2 && (len(waits) != 1 || waits[0] < tt.wantAfter) {
		t.Errorf("waits %v, want one of at least %v", waits, tt.wantAfter)
	}
}
