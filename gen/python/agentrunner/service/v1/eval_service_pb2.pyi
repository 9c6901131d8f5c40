from agentrunner.v1 import eval_pb2 as _eval_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetEvalRunRequest(_message.Message):
    __slots__ = ["app_name", "eval_run_id", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    EVAL_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    eval_run_id: str
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., eval_run_id: _Optional[str] = ...) -> None: ...

class GetEvalRunResponse(_message.Message):
    __slots__ = ["eval_run"]
    EVAL_RUN_FIELD_NUMBER: _ClassVar[int]
    eval_run: _eval_pb2.EvalRun
    def __init__(self, eval_run: _Optional[_Union[_eval_pb2.EvalRun, _Mapping]] = ...) -> None: ...

class ListEvalRunsRequest(_message.Message):
    __slots__ = ["app_name", "limit", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    limit: int
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListEvalRunsResponse(_message.Message):
    __slots__ = ["eval_runs"]
    EVAL_RUNS_FIELD_NUMBER: _ClassVar[int]
    eval_runs: _containers.RepeatedCompositeFieldContainer[_eval_pb2.EvalRun]
    def __init__(self, eval_runs: _Optional[_Iterable[_Union[_eval_pb2.EvalRun, _Mapping]]] = ...) -> None: ...

class RunEvalRequest(_message.Message):
    __slots__ = ["app_name", "config", "eval_set", "eval_set_name", "label", "parallelism", "repeats", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    EVAL_SET_FIELD_NUMBER: _ClassVar[int]
    EVAL_SET_NAME_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    REPEATS_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    config: bytes
    eval_set: bytes
    eval_set_name: str
    label: str
    parallelism: int
    repeats: int
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., eval_set: _Optional[bytes] = ..., eval_set_name: _Optional[str] = ..., config: _Optional[bytes] = ..., repeats: _Optional[int] = ..., parallelism: _Optional[int] = ..., label: _Optional[str] = ...) -> None: ...

class RunEvalResponse(_message.Message):
    __slots__ = ["eval_run"]
    EVAL_RUN_FIELD_NUMBER: _ClassVar[int]
    eval_run: _eval_pb2.EvalRun
    def __init__(self, eval_run: _Optional[_Union[_eval_pb2.EvalRun, _Mapping]] = ...) -> None: ...
