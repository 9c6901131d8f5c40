from agentrunner.v1 import event_pb2 as _event_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ForkedFrom(_message.Message):
    __slots__ = ["event_id", "sequence", "session_id", "user_id"]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    sequence: int
    session_id: str
    user_id: str
    def __init__(self, user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., sequence: _Optional[int] = ..., event_id: _Optional[str] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ["app_name", "compacted_sequence", "cost", "create_time", "forked_from", "last_sequence", "session_id", "state", "total_tokens", "update_time", "usage", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    COMPACTED_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    FORKED_FROM_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    compacted_sequence: int
    cost: _event_pb2.Cost
    create_time: _timestamp_pb2.Timestamp
    forked_from: ForkedFrom
    last_sequence: int
    session_id: str
    state: _struct_pb2.Struct
    total_tokens: int
    update_time: _timestamp_pb2.Timestamp
    usage: _event_pb2.UsageMetadata
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., state: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_sequence: _Optional[int] = ..., usage: _Optional[_Union[_event_pb2.UsageMetadata, _Mapping]] = ..., compacted_sequence: _Optional[int] = ..., cost: _Optional[_Union[_event_pb2.Cost, _Mapping]] = ..., total_tokens: _Optional[int] = ..., forked_from: _Optional[_Union[ForkedFrom, _Mapping]] = ...) -> None: ...
