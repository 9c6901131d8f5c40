from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ToolCall(_message.Message):
    __slots__ = ["args_digest", "author", "call_id", "call_sequence", "call_time", "invocation_id", "response_sequence", "response_time", "result_digest", "tool", "waits_for_caller"]
    ARGS_DIGEST_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    CALL_TIME_FIELD_NUMBER: _ClassVar[int]
    INVOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_TIME_FIELD_NUMBER: _ClassVar[int]
    RESULT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    WAITS_FOR_CALLER_FIELD_NUMBER: _ClassVar[int]
    args_digest: str
    author: str
    call_id: str
    call_sequence: int
    call_time: _timestamp_pb2.Timestamp
    invocation_id: str
    response_sequence: int
    response_time: _timestamp_pb2.Timestamp
    result_digest: str
    tool: str
    waits_for_caller: bool
    def __init__(self, call_id: _Optional[str] = ..., tool: _Optional[str] = ..., author: _Optional[str] = ..., invocation_id: _Optional[str] = ..., args_digest: _Optional[str] = ..., call_sequence: _Optional[int] = ..., call_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., waits_for_caller: bool = ..., response_sequence: _Optional[int] = ..., response_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., result_digest: _Optional[str] = ...) -> None: ...
