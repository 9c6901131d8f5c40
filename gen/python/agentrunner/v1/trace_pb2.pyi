from agentrunner.v1 import agent_pb2 as _agent_pb2
from agentrunner.v1 import event_pb2 as _event_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
TRACE_SPAN_KIND_AGENT: TraceSpanKind
TRACE_SPAN_KIND_MODEL_CALL: TraceSpanKind
TRACE_SPAN_KIND_RUN: TraceSpanKind
TRACE_SPAN_KIND_TOOL_CALL: TraceSpanKind
TRACE_SPAN_KIND_UNSPECIFIED: TraceSpanKind

class TraceSpan(_message.Message):
    __slots__ = ["agent_kind", "agent_name", "branch", "call_id", "cost", "duration", "error_code", "error_message", "event_sequences", "kind", "model", "name", "open", "parent_span_id", "span_id", "start_time", "time_to_first_chunk", "tool_name", "transfer_to_agent", "usage", "waiting"]
    AGENT_KIND_FIELD_NUMBER: _ClassVar[int]
    AGENT_NAME_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EVENT_SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPEN_FIELD_NUMBER: _ClassVar[int]
    PARENT_SPAN_ID_FIELD_NUMBER: _ClassVar[int]
    SPAN_ID_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    TIME_TO_FIRST_CHUNK_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_TO_AGENT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    agent_kind: _agent_pb2.AgentKind
    agent_name: str
    branch: str
    call_id: str
    cost: _event_pb2.Cost
    duration: _duration_pb2.Duration
    error_code: str
    error_message: str
    event_sequences: _containers.RepeatedScalarFieldContainer[int]
    kind: TraceSpanKind
    model: str
    name: str
    open: bool
    parent_span_id: str
    span_id: str
    start_time: _timestamp_pb2.Timestamp
    time_to_first_chunk: _duration_pb2.Duration
    tool_name: str
    transfer_to_agent: str
    usage: _event_pb2.UsageMetadata
    waiting: bool
    def __init__(self, span_id: _Optional[str] = ..., parent_span_id: _Optional[str] = ..., name: _Optional[str] = ..., kind: _Optional[_Union[TraceSpanKind, str]] = ..., agent_name: _Optional[str] = ..., agent_kind: _Optional[_Union[_agent_pb2.AgentKind, str]] = ..., branch: _Optional[str] = ..., start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., time_to_first_chunk: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., model: _Optional[str] = ..., tool_name: _Optional[str] = ..., call_id: _Optional[str] = ..., transfer_to_agent: _Optional[str] = ..., usage: _Optional[_Union[_event_pb2.UsageMetadata, _Mapping]] = ..., cost: _Optional[_Union[_event_pb2.Cost, _Mapping]] = ..., event_sequences: _Optional[_Iterable[int]] = ..., open: bool = ..., waiting: bool = ..., error_code: _Optional[str] = ..., error_message: _Optional[str] = ...) -> None: ...

class TraceSpanKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
