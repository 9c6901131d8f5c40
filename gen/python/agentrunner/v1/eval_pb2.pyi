from agentrunner.v1 import content_pb2 as _content_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EvalCaseRepeat(_message.Message):
    __slots__ = ["error", "invocations", "session_id"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    INVOCATIONS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    error: str
    invocations: _containers.RepeatedCompositeFieldContainer[EvalInvocation]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., error: _Optional[str] = ..., invocations: _Optional[_Iterable[_Union[EvalInvocation, _Mapping]]] = ...) -> None: ...

class EvalCaseResult(_message.Message):
    __slots__ = ["eval_id", "metrics", "passed", "repeats"]
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    REPEATS_FIELD_NUMBER: _ClassVar[int]
    eval_id: str
    metrics: _containers.RepeatedCompositeFieldContainer[EvalMetricResult]
    passed: bool
    repeats: _containers.RepeatedCompositeFieldContainer[EvalCaseRepeat]
    def __init__(self, eval_id: _Optional[str] = ..., passed: bool = ..., metrics: _Optional[_Iterable[_Union[EvalMetricResult, _Mapping]]] = ..., repeats: _Optional[_Iterable[_Union[EvalCaseRepeat, _Mapping]]] = ...) -> None: ...

class EvalCriterion(_message.Message):
    __slots__ = ["ignore_args", "judge_model", "match_type", "metric", "rubrics", "threshold"]
    IGNORE_ARGS_FIELD_NUMBER: _ClassVar[int]
    JUDGE_MODEL_FIELD_NUMBER: _ClassVar[int]
    MATCH_TYPE_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    RUBRICS_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    ignore_args: bool
    judge_model: str
    match_type: str
    metric: str
    rubrics: _containers.RepeatedScalarFieldContainer[str]
    threshold: float
    def __init__(self, metric: _Optional[str] = ..., threshold: _Optional[float] = ..., match_type: _Optional[str] = ..., ignore_args: bool = ..., judge_model: _Optional[str] = ..., rubrics: _Optional[_Iterable[str]] = ...) -> None: ...

class EvalInvocation(_message.Message):
    __slots__ = ["actual_response", "actual_tool_uses", "expected_response", "expected_tool_uses", "run_id", "scores", "user_text"]
    class ScoresEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    ACTUAL_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_TOOL_USES_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_TOOL_USES_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    USER_TEXT_FIELD_NUMBER: _ClassVar[int]
    actual_response: str
    actual_tool_uses: _containers.RepeatedCompositeFieldContainer[_content_pb2.FunctionCall]
    expected_response: str
    expected_tool_uses: _containers.RepeatedCompositeFieldContainer[_content_pb2.FunctionCall]
    run_id: str
    scores: _containers.ScalarMap[str, float]
    user_text: str
    def __init__(self, run_id: _Optional[str] = ..., user_text: _Optional[str] = ..., expected_response: _Optional[str] = ..., actual_response: _Optional[str] = ..., expected_tool_uses: _Optional[_Iterable[_Union[_content_pb2.FunctionCall, _Mapping]]] = ..., actual_tool_uses: _Optional[_Iterable[_Union[_content_pb2.FunctionCall, _Mapping]]] = ..., scores: _Optional[_Mapping[str, float]] = ...) -> None: ...

class EvalMetricResult(_message.Message):
    __slots__ = ["error", "metric", "passed", "score", "threshold"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    error: str
    metric: str
    passed: bool
    score: float
    threshold: float
    def __init__(self, metric: _Optional[str] = ..., threshold: _Optional[float] = ..., score: _Optional[float] = ..., passed: bool = ..., error: _Optional[str] = ...) -> None: ...

class EvalRun(_message.Message):
    __slots__ = ["app_name", "cases", "create_time", "criteria", "end_time", "eval_run_id", "eval_set_id", "label", "passed", "repeats", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    CASES_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    CRITERIA_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    EVAL_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    EVAL_SET_ID_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    REPEATS_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    cases: _containers.RepeatedCompositeFieldContainer[EvalCaseResult]
    create_time: _timestamp_pb2.Timestamp
    criteria: _containers.RepeatedCompositeFieldContainer[EvalCriterion]
    end_time: _timestamp_pb2.Timestamp
    eval_run_id: str
    eval_set_id: str
    label: str
    passed: bool
    repeats: int
    user_id: str
    def __init__(self, eval_run_id: _Optional[str] = ..., app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., eval_set_id: _Optional[str] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., repeats: _Optional[int] = ..., criteria: _Optional[_Iterable[_Union[EvalCriterion, _Mapping]]] = ..., cases: _Optional[_Iterable[_Union[EvalCaseResult, _Mapping]]] = ..., passed: bool = ..., label: _Optional[str] = ...) -> None: ...
