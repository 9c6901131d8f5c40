from agentrunner.v1 import agent_pb2 as _agent_pb2
from agentrunner.v1 import content_pb2 as _content_pb2
from agentrunner.v1 import event_pb2 as _event_pb2
from agentrunner.v1 import run_pb2 as _run_pb2
from agentrunner.v1 import trace_pb2 as _trace_pb2
from agentrunner.v1 import webhook_pb2 as _webhook_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AttachRunRequest(_message.Message):
    __slots__ = ["after_sequence", "run_id"]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    after_sequence: int
    run_id: str
    def __init__(self, run_id: _Optional[str] = ..., after_sequence: _Optional[int] = ...) -> None: ...

class CancelRunRequest(_message.Message):
    __slots__ = ["run_id"]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class CancelRunResponse(_message.Message):
    __slots__ = ["run"]
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: _run_pb2.Run
    def __init__(self, run: _Optional[_Union[_run_pb2.Run, _Mapping]] = ...) -> None: ...

class GetRunRequest(_message.Message):
    __slots__ = ["run_id"]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class GetRunResponse(_message.Message):
    __slots__ = ["run"]
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: _run_pb2.Run
    def __init__(self, run: _Optional[_Union[_run_pb2.Run, _Mapping]] = ...) -> None: ...

class GetRunTraceRequest(_message.Message):
    __slots__ = ["run_id"]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class GetRunTraceResponse(_message.Message):
    __slots__ = ["run", "spans", "truncated"]
    RUN_FIELD_NUMBER: _ClassVar[int]
    SPANS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    run: _run_pb2.Run
    spans: _containers.RepeatedCompositeFieldContainer[_trace_pb2.TraceSpan]
    truncated: bool
    def __init__(self, run: _Optional[_Union[_run_pb2.Run, _Mapping]] = ..., spans: _Optional[_Iterable[_Union[_trace_pb2.TraceSpan, _Mapping]]] = ..., truncated: bool = ...) -> None: ...

class ListAppsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListAppsResponse(_message.Message):
    __slots__ = ["apps"]
    APPS_FIELD_NUMBER: _ClassVar[int]
    apps: _containers.RepeatedCompositeFieldContainer[_agent_pb2.App]
    def __init__(self, apps: _Optional[_Iterable[_Union[_agent_pb2.App, _Mapping]]] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ["app_name", "page_size", "page_token", "session_id", "statuses", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATUSES_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    page_size: int
    page_token: str
    session_id: str
    statuses: _containers.RepeatedScalarFieldContainer[_run_pb2.RunStatus]
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., statuses: _Optional[_Iterable[_Union[_run_pb2.RunStatus, str]]] = ...) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ["next_page_token", "runs"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    runs: _containers.RepeatedCompositeFieldContainer[_run_pb2.Run]
    def __init__(self, runs: _Optional[_Iterable[_Union[_run_pb2.Run, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ResumeRunRequest(_message.Message):
    __slots__ = ["answers", "on_disconnect", "retry_call_ids", "run_id"]
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    ON_DISCONNECT_FIELD_NUMBER: _ClassVar[int]
    RETRY_CALL_IDS_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    answers: _content_pb2.Content
    on_disconnect: _run_pb2.OnDisconnect
    retry_call_ids: _containers.RepeatedScalarFieldContainer[str]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ..., answers: _Optional[_Union[_content_pb2.Content, _Mapping]] = ..., retry_call_ids: _Optional[_Iterable[str]] = ..., on_disconnect: _Optional[_Union[_run_pb2.OnDisconnect, str]] = ...) -> None: ...

class RunRequest(_message.Message):
    __slots__ = ["app_name", "multitask_strategy", "new_message", "on_disconnect", "request_id", "run_config", "session_id", "state_delta", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    MULTITASK_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    NEW_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ON_DISCONNECT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_CONFIG_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_DELTA_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    multitask_strategy: _run_pb2.MultitaskStrategy
    new_message: _content_pb2.Content
    on_disconnect: _run_pb2.OnDisconnect
    request_id: str
    run_config: _run_pb2.RunConfig
    session_id: str
    state_delta: _struct_pb2.Struct
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., new_message: _Optional[_Union[_content_pb2.Content, _Mapping]] = ..., state_delta: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., run_config: _Optional[_Union[_run_pb2.RunConfig, _Mapping]] = ..., request_id: _Optional[str] = ..., multitask_strategy: _Optional[_Union[_run_pb2.MultitaskStrategy, str]] = ..., on_disconnect: _Optional[_Union[_run_pb2.OnDisconnect, str]] = ...) -> None: ...

class RunResponse(_message.Message):
    __slots__ = ["error", "event", "run"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    error: _run_pb2.Status
    event: _event_pb2.Event
    run: _run_pb2.Run
    def __init__(self, event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ..., error: _Optional[_Union[_run_pb2.Status, _Mapping]] = ..., run: _Optional[_Union[_run_pb2.Run, _Mapping]] = ...) -> None: ...

class StartRunRequest(_message.Message):
    __slots__ = ["app_name", "multitask_strategy", "new_message", "request_id", "run_config", "session_id", "state_delta", "user_id", "webhook"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    MULTITASK_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    NEW_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_CONFIG_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_DELTA_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    WEBHOOK_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    multitask_strategy: _run_pb2.MultitaskStrategy
    new_message: _content_pb2.Content
    request_id: str
    run_config: _run_pb2.RunConfig
    session_id: str
    state_delta: _struct_pb2.Struct
    user_id: str
    webhook: _webhook_pb2.Webhook
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., new_message: _Optional[_Union[_content_pb2.Content, _Mapping]] = ..., state_delta: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., run_config: _Optional[_Union[_run_pb2.RunConfig, _Mapping]] = ..., request_id: _Optional[str] = ..., multitask_strategy: _Optional[_Union[_run_pb2.MultitaskStrategy, str]] = ..., webhook: _Optional[_Union[_webhook_pb2.Webhook, _Mapping]] = ...) -> None: ...

class StartRunResponse(_message.Message):
    __slots__ = ["run"]
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: _run_pb2.Run
    def __init__(self, run: _Optional[_Union[_run_pb2.Run, _Mapping]] = ...) -> None: ...
