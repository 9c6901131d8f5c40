package runrec

// google.rpc.Code values of run records' errors. The runner does not
// import gRPC; the numbers are the wire's, and the server maps the same
// causes to the same codes.
const (
	CodeCanceled           int32 = 1
	CodeUnknown            int32 = 2
	CodeInvalidArgument    int32 = 3
	CodeDeadlineExceeded   int32 = 4
	CodeNotFound           int32 = 5
	CodeAlreadyExists      int32 = 6
	CodePermissionDenied   int32 = 7
	CodeResourceExhausted  int32 = 8
	CodeFailedPrecondition int32 = 9
	CodeAborted            int32 = 10
	CodeOutOfRange         int32 = 11
	CodeUnimplemented      int32 = 12
	CodeInternal           int32 = 13
	CodeUnavailable        int32 = 14
	CodeDataLoss           int32 = 15
	CodeUnauthenticated    int32 = 16
)

// codeNames maps the google.rpc.Code names that events carry in
// error_code (a model's failure after its retries is classified as one of
// them) to their numbers. A name outside it, such as a model's finish
// reason (SAFETY, MAX_TOKENS), is UNKNOWN.
var codeNames = map[string]int32{
	"CANCELLED": CodeCanceled, "UNKNOWN": CodeUnknown, "INVALID_ARGUMENT": CodeInvalidArgument,
	"DEADLINE_EXCEEDED": CodeDeadlineExceeded, "NOT_FOUND": CodeNotFound, "ALREADY_EXISTS": CodeAlreadyExists,
	"PERMISSION_DENIED": CodePermissionDenied, "RESOURCE_EXHAUSTED": CodeResourceExhausted,
	"FAILED_PRECONDITION": CodeFailedPrecondition, "ABORTED": CodeAborted, "OUT_OF_RANGE": CodeOutOfRange,
	"UNIMPLEMENTED": CodeUnimplemented, "INTERNAL": CodeInternal, "UNAVAILABLE": CodeUnavailable,
	"DATA_LOSS": CodeDataLoss, "UNAUTHENTICATED": CodeUnauthenticated,
}

// CodeOf returns the code an event's error_code names; UNKNOWN for a
// name that is not a google.rpc.Code.
func CodeOf(name string) int32 {
	if c, ok := codeNames[name]; ok {
		return c
	}
	return CodeUnknown
}
