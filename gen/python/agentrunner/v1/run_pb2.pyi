from agentrunner.v1 import content_pb2 as _content_pb2
from agentrunner.v1 import event_pb2 as _event_pb2
from agentrunner.v1 import webhook_pb2 as _webhook_pb2
from google.protobuf import any_pb2 as _any_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
MULTITASK_STRATEGY_ENQUEUE: MultitaskStrategy
MULTITASK_STRATEGY_INTERRUPT: MultitaskStrategy
MULTITASK_STRATEGY_REJECT: MultitaskStrategy
MULTITASK_STRATEGY_UNSPECIFIED: MultitaskStrategy
ON_DISCONNECT_CANCEL: OnDisconnect
ON_DISCONNECT_CONTINUE: OnDisconnect
ON_DISCONNECT_UNSPECIFIED: OnDisconnect
RUN_STATUS_CANCELLED: RunStatus
RUN_STATUS_FAILED: RunStatus
RUN_STATUS_INPUT_REQUIRED: RunStatus
RUN_STATUS_INTERRUPTED: RunStatus
RUN_STATUS_PENDING: RunStatus
RUN_STATUS_RUNNING: RunStatus
RUN_STATUS_SUCCEEDED: RunStatus
RUN_STATUS_UNSPECIFIED: RunStatus
STREAMING_MODE_NONE: StreamingMode
STREAMING_MODE_SSE: StreamingMode
STREAMING_MODE_UNSPECIFIED: StreamingMode

class Run(_message.Message):
    __slots__ = ["app_name", "config_version", "continued_by_run_id", "cost", "create_time", "end_time", "error", "eval_run_id", "first_sequence", "input", "last_sequence", "multitask_strategy", "on_disconnect", "pending_call_ids", "request_digest", "request_id", "run_id", "schedule_id", "session_id", "start_time", "status", "total_tokens", "usage", "usage_by_agent", "user_id", "webhook"]
    class UsageByAgentEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _event_pb2.UsageMetadata
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_event_pb2.UsageMetadata, _Mapping]] = ...) -> None: ...
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_VERSION_FIELD_NUMBER: _ClassVar[int]
    CONTINUED_BY_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EVAL_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    MULTITASK_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    ON_DISCONNECT_FIELD_NUMBER: _ClassVar[int]
    PENDING_CALL_IDS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_DIGEST_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    USAGE_BY_AGENT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    WEBHOOK_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    config_version: str
    continued_by_run_id: str
    cost: _event_pb2.Cost
    create_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    error: Status
    eval_run_id: str
    first_sequence: int
    input: RunInput
    last_sequence: int
    multitask_strategy: MultitaskStrategy
    on_disconnect: OnDisconnect
    pending_call_ids: _containers.RepeatedScalarFieldContainer[str]
    request_digest: str
    request_id: str
    run_id: str
    schedule_id: str
    session_id: str
    start_time: _timestamp_pb2.Timestamp
    status: RunStatus
    total_tokens: int
    usage: _event_pb2.UsageMetadata
    usage_by_agent: _containers.MessageMap[str, _event_pb2.UsageMetadata]
    user_id: str
    webhook: _webhook_pb2.Webhook
    def __init__(self, run_id: _Optional[str] = ..., app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., status: _Optional[_Union[RunStatus, str]] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., first_sequence: _Optional[int] = ..., last_sequence: _Optional[int] = ..., error: _Optional[_Union[Status, _Mapping]] = ..., request_id: _Optional[str] = ..., pending_call_ids: _Optional[_Iterable[str]] = ..., usage: _Optional[_Union[_event_pb2.UsageMetadata, _Mapping]] = ..., multitask_strategy: _Optional[_Union[MultitaskStrategy, str]] = ..., on_disconnect: _Optional[_Union[OnDisconnect, str]] = ..., input: _Optional[_Union[RunInput, _Mapping]] = ..., request_digest: _Optional[str] = ..., usage_by_agent: _Optional[_Mapping[str, _event_pb2.UsageMetadata]] = ..., continued_by_run_id: _Optional[str] = ..., cost: _Optional[_Union[_event_pb2.Cost, _Mapping]] = ..., total_tokens: _Optional[int] = ..., config_version: _Optional[str] = ..., webhook: _Optional[_Union[_webhook_pb2.Webhook, _Mapping]] = ..., schedule_id: _Optional[str] = ..., eval_run_id: _Optional[str] = ...) -> None: ...

class RunConfig(_message.Message):
    __slots__ = ["max_llm_calls", "save_input_blobs_as_artifacts", "stream_user_event", "streaming_mode"]
    MAX_LLM_CALLS_FIELD_NUMBER: _ClassVar[int]
    SAVE_INPUT_BLOBS_AS_ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    STREAMING_MODE_FIELD_NUMBER: _ClassVar[int]
    STREAM_USER_EVENT_FIELD_NUMBER: _ClassVar[int]
    max_llm_calls: int
    save_input_blobs_as_artifacts: bool
    stream_user_event: bool
    streaming_mode: StreamingMode
    def __init__(self, save_input_blobs_as_artifacts: bool = ..., max_llm_calls: _Optional[int] = ..., stream_user_event: bool = ..., streaming_mode: _Optional[_Union[StreamingMode, str]] = ...) -> None: ...

class RunInput(_message.Message):
    __slots__ = ["new_message", "run_config", "state_delta"]
    NEW_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RUN_CONFIG_FIELD_NUMBER: _ClassVar[int]
    STATE_DELTA_FIELD_NUMBER: _ClassVar[int]
    new_message: _content_pb2.Content
    run_config: RunConfig
    state_delta: _struct_pb2.Struct
    def __init__(self, new_message: _Optional[_Union[_content_pb2.Content, _Mapping]] = ..., state_delta: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., run_config: _Optional[_Union[RunConfig, _Mapping]] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ["code", "details", "message"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    details: _containers.RepeatedCompositeFieldContainer[_any_pb2.Any]
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., details: _Optional[_Iterable[_Union[_any_pb2.Any, _Mapping]]] = ...) -> None: ...

class StreamingMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RunStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class MultitaskStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class OnDisconnect(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
