package model

import (
	"strconv"

	"google.golang.org/protobuf/types/known/structpb"
)

// What the providers that speak JSON over their own SDK (openai,
// anthropic) convert alike at that boundary. Gemini's genai types take
// float32 and a nil map for an absent Struct, so it converts its own way.

// Finish reasons, in Gemini's words, which the runner and its callers
// already know: every provider reports its own reasons in these.
// FinishStop is a normal end (a tool call included); any other is an
// answer cut short, which becomes the response's ErrorCode.
const (
	FinishStop      = "STOP"
	FinishMaxTokens = "MAX_TOKENS"
	FinishSafety    = "SAFETY"
	// FinishMalformedCall is a function call whose arguments are not a
	// JSON object.
	FinishMalformedCall = "MALFORMED_FUNCTION_CALL"
)

// JSONObject returns s as a JSON object, an absent Struct as an empty
// one: the APIs want an object for tool arguments, input and results
// alike.
func JSONObject(s *structpb.Struct) map[string]any {
	if s == nil {
		return map[string]any{}
	}
	return s.AsMap()
}

// Widen converts a float32 setting to the float64 the SDKs take by its
// shortest decimal form, so that a temperature of 0.2 is sent as 0.2, not
// as 0.20000000298023224.
func Widen(f float32) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	if err != nil {
		return float64(f)
	}
	return v
}
