package tool

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type address struct {
	Street string `json:"street"`
	Zip    string `json:"zip,omitempty"`
}

type Embedded struct {
	Shared string `json:"shared"`
	Tag    string `json:"tag,omitempty"`
}

type node struct {
	Children []node `json:"children"`
}

// argsSchemaCases are Go argument types and the schema derived from each.
var argsSchemaCases = []struct {
	name    string
	typ     reflect.Type
	want    string
	wantErr string
}{
	{
		name: "basic types, tags and descriptions",
		typ: reflect.TypeFor[struct {
			Name    string   `json:"name" description:"Who to greet."`
			Times   int      `json:"times,omitempty" jsonschema:"How often."`
			Ratio   float64  `json:"ratio,omitempty" jsonschema:"description=A ratio, between 0 and 1."`
			Loud    *bool    `json:"loud"`
			Tags    []string `json:"tags,omitzero"`
			Skipped string   `json:"-"`
			hidden  string
			NoTag   uint8
		}](),
		want: `{"properties":{"NoTag":{"type":"integer"},"loud":{"type":"boolean"},` +
			`"name":{"description":"Who to greet.","type":"string"},` +
			`"ratio":{"description":"A ratio, between 0 and 1.","type":"number"},` +
			`"tags":{"items":{"type":"string"},"type":"array"},` +
			`"times":{"description":"How often.","type":"integer"}},` +
			`"required":["name","loud","NoTag"],"type":"object"}`,
	},
	{
		name: "nested structs, maps, time, any, bytes",
		typ: reflect.TypeFor[*struct {
			Home   address            `json:"home"`
			Others []*address         `json:"others,omitempty"`
			Scores map[string]float32 `json:"scores"`
			When   time.Time          `json:"when"`
			Extra  any                `json:"extra,omitempty"`
			Raw    []byte             `json:"raw,omitempty"`
		}](),
		want: `{"properties":{` +
			`"extra":{},` +
			`"home":{"properties":{"street":{"type":"string"},"zip":{"type":"string"}},"required":["street"],"type":"object"},` +
			`"others":{"items":{"properties":{"street":{"type":"string"},"zip":{"type":"string"}},"required":["street"],"type":"object"},"type":"array"},` +
			`"raw":{"description":"base64-encoded bytes","type":"string"},` +
			`"scores":{"additionalProperties":{"type":"number"},"type":"object"},` +
			`"when":{"format":"date-time","type":"string"}},` +
			`"required":["home","scores","when"],"type":"object"}`,
	},
	{
		name: "embedded fields are promoted; the outer name wins",
		typ: reflect.TypeFor[struct {
			Embedded
			Tag string `json:"tag"`
		}](),
		want: `{"properties":{"shared":{"type":"string"},"tag":{"type":"string"}},"required":["tag","shared"],"type":"object"}`,
	},
	{name: "no arguments", typ: reflect.TypeFor[struct{}](), want: `{"properties":{},"type":"object"}`},
	{name: "any object", typ: reflect.TypeFor[map[string]any](), want: `{"type":"object"}`},
	{name: "not an object", typ: reflect.TypeFor[string](), wantErr: "want a struct"},
	{name: "recursive", typ: reflect.TypeFor[node](), wantErr: "recursive"},
	{name: "channel field", typ: reflect.TypeFor[struct{ C chan int }](), wantErr: "field C"},
	{name: "map with bool keys", typ: reflect.TypeFor[struct{ M map[bool]int }](), wantErr: "map keys"},
}

func TestArgsSchema(t *testing.T) {
	for _, tc := range argsSchemaCases {
		t.Run(tc.name, func(t *testing.T) {
			schema, _, err := argsSchema(tc.typ)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(schema)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("schema\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestFunctionToolRun(t *testing.T) {
	type args struct {
		City string `json:"city"`
		Days int    `json:"days,omitempty"`
	}
	forecast := must[Tool](t)(NewFunction("forecast", "Forecasts.", func(_ Context, a args) (map[string]any, error) {
		if a.City == "nowhere" {
			return nil, errors.New("unknown city")
		}
		return map[string]any{"city": a.City, "days": a.Days}, nil
	}))
	scalar := must[Tool](t)(NewFunction("scalar", "Returns a number.", func(_ Context, _ struct{}) (int, error) { return 7, nil }))
	none := must[Tool](t)(NewLongRunningFunction("start", "Starts.", func(_ Context, _ struct{}) (*struct{}, error) { return nil, nil }))
	tests := []struct {
		name    string
		tool    Tool
		args    map[string]any
		want    string
		wantErr string
	}{
		{name: "ok", tool: forecast, args: map[string]any{"city": "Oslo", "days": 3.0}, want: `{"city":"Oslo","days":3}`},
		{name: "optional left out", tool: forecast, args: map[string]any{"city": "Oslo"}, want: `{"city":"Oslo","days":0}`},
		{name: "missing required", tool: forecast, args: map[string]any{"days": 3.0}, wantErr: `missing required argument "city"`},
		{name: "wrong type", tool: forecast, args: map[string]any{"city": 12.0}, wantErr: "invalid arguments"},
		{name: "function error", tool: forecast, args: map[string]any{"city": "nowhere"}, wantErr: "unknown city"},
		{name: "non-object result", tool: scalar, want: `{"result":7}`},
		{name: "null result", tool: none, want: `null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.tool.Run(nil, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(got); string(b) != tc.want {
				t.Fatalf("result %s, want %s", b, tc.want)
			}
		})
	}
	if !none.IsLongRunning() || forecast.IsLongRunning() {
		t.Error("long-running flags")
	}
	if d := forecast.Declaration(); d.Name != "forecast" || d.Description != "Forecasts." || d.Parameters["type"] != "object" {
		t.Errorf("declaration %+v", d)
	}
	if _, err := NewFunction("bad", "", func(Context, int) (int, error) { return 0, nil }); err == nil {
		t.Error("a non-object argument type was accepted")
	}
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
