from agentrunner.v1 import content_pb2 as _content_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Event(_message.Message):
    __slots__ = ["actions", "author", "branch", "content", "error_code", "error_message", "id", "invocation_id", "long_running_tool_ids", "partial", "sequence", "timestamp", "turn_complete", "usage_metadata"]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    INVOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    LONG_RUNNING_TOOL_IDS_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TURN_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    USAGE_METADATA_FIELD_NUMBER: _ClassVar[int]
    actions: EventActions
    author: str
    branch: str
    content: _content_pb2.Content
    error_code: str
    error_message: str
    id: str
    invocation_id: str
    long_running_tool_ids: _containers.RepeatedScalarFieldContainer[str]
    partial: bool
    sequence: int
    timestamp: _timestamp_pb2.Timestamp
    turn_complete: bool
    usage_metadata: UsageMetadata
    def __init__(self, id: _Optional[str] = ..., invocation_id: _Optional[str] = ..., author: _Optional[str] = ..., branch: _Optional[str] = ..., timestamp: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., sequence: _Optional[int] = ..., content: _Optional[_Union[_content_pb2.Content, _Mapping]] = ..., partial: bool = ..., turn_complete: bool = ..., error_code: _Optional[str] = ..., error_message: _Optional[str] = ..., actions: _Optional[_Union[EventActions, _Mapping]] = ..., long_running_tool_ids: _Optional[_Iterable[str]] = ..., usage_metadata: _Optional[_Union[UsageMetadata, _Mapping]] = ...) -> None: ...

class EventActions(_message.Message):
    __slots__ = ["artifact_delta", "compaction", "escalate", "skip_summarization", "state_delta", "transfer_to_agent"]
    class ArtifactDeltaEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ARTIFACT_DELTA_FIELD_NUMBER: _ClassVar[int]
    COMPACTION_FIELD_NUMBER: _ClassVar[int]
    ESCALATE_FIELD_NUMBER: _ClassVar[int]
    SKIP_SUMMARIZATION_FIELD_NUMBER: _ClassVar[int]
    STATE_DELTA_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_TO_AGENT_FIELD_NUMBER: _ClassVar[int]
    artifact_delta: _containers.ScalarMap[str, int]
    compaction: EventCompaction
    escalate: bool
    skip_summarization: bool
    state_delta: _struct_pb2.Struct
    transfer_to_agent: str
    def __init__(self, state_delta: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., artifact_delta: _Optional[_Mapping[str, int]] = ..., transfer_to_agent: _Optional[str] = ..., escalate: bool = ..., skip_summarization: bool = ..., compaction: _Optional[_Union[EventCompaction, _Mapping]] = ...) -> None: ...

class EventCompaction(_message.Message):
    __slots__ = ["end_sequence", "start_sequence", "summary"]
    END_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    START_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    end_sequence: int
    start_sequence: int
    summary: _content_pb2.Content
    def __init__(self, start_sequence: _Optional[int] = ..., end_sequence: _Optional[int] = ..., summary: _Optional[_Union[_content_pb2.Content, _Mapping]] = ...) -> None: ...

class UsageMetadata(_message.Message):
    __slots__ = ["cached_content_token_count", "candidates_token_count", "prompt_token_count", "thoughts_token_count", "tool_use_prompt_token_count", "total_token_count"]
    CACHED_CONTENT_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    THOUGHTS_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOOL_USE_PROMPT_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    cached_content_token_count: int
    candidates_token_count: int
    prompt_token_count: int
    thoughts_token_count: int
    tool_use_prompt_token_count: int
    total_token_count: int
    def __init__(self, prompt_token_count: _Optional[int] = ..., candidates_token_count: _Optional[int] = ..., thoughts_token_count: _Optional[int] = ..., cached_content_token_count: _Optional[int] = ..., tool_use_prompt_token_count: _Optional[int] = ..., total_token_count: _Optional[int] = ...) -> None: ...
