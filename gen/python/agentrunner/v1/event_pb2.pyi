from agentrunner.v1 import content_pb2 as _content_pb2
from agentrunner.v1 import timing_pb2 as _timing_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Citation(_message.Message):
    __slots__ = ["end_index", "license", "publication_date", "start_index", "title", "uri"]
    END_INDEX_FIELD_NUMBER: _ClassVar[int]
    LICENSE_FIELD_NUMBER: _ClassVar[int]
    PUBLICATION_DATE_FIELD_NUMBER: _ClassVar[int]
    START_INDEX_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    end_index: int
    license: str
    publication_date: str
    start_index: int
    title: str
    uri: str
    def __init__(self, start_index: _Optional[int] = ..., end_index: _Optional[int] = ..., uri: _Optional[str] = ..., title: _Optional[str] = ..., license: _Optional[str] = ..., publication_date: _Optional[str] = ...) -> None: ...

class CitationMetadata(_message.Message):
    __slots__ = ["citations"]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    citations: _containers.RepeatedCompositeFieldContainer[Citation]
    def __init__(self, citations: _Optional[_Iterable[_Union[Citation, _Mapping]]] = ...) -> None: ...

class Cost(_message.Message):
    __slots__ = ["currency", "micros", "model", "unpriced_calls"]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    MICROS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    UNPRICED_CALLS_FIELD_NUMBER: _ClassVar[int]
    currency: str
    micros: int
    model: str
    unpriced_calls: int
    def __init__(self, currency: _Optional[str] = ..., micros: _Optional[int] = ..., unpriced_calls: _Optional[int] = ..., model: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ["actions", "author", "branch", "citation_metadata", "content", "cost", "custom_metadata", "error_code", "error_message", "finish_reason", "grounding_metadata", "id", "interrupted", "invocation_id", "long_running_tool_ids", "model_version", "partial", "sequence", "timestamp", "timing", "turn_complete", "usage_metadata"]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    CITATION_METADATA_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_METADATA_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    GROUNDING_METADATA_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    INTERRUPTED_FIELD_NUMBER: _ClassVar[int]
    INVOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    LONG_RUNNING_TOOL_IDS_FIELD_NUMBER: _ClassVar[int]
    MODEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    TURN_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    USAGE_METADATA_FIELD_NUMBER: _ClassVar[int]
    actions: EventActions
    author: str
    branch: str
    citation_metadata: CitationMetadata
    content: _content_pb2.Content
    cost: Cost
    custom_metadata: _struct_pb2.Struct
    error_code: str
    error_message: str
    finish_reason: str
    grounding_metadata: _struct_pb2.Struct
    id: str
    interrupted: bool
    invocation_id: str
    long_running_tool_ids: _containers.RepeatedScalarFieldContainer[str]
    model_version: str
    partial: bool
    sequence: int
    timestamp: _timestamp_pb2.Timestamp
    timing: _timing_pb2.Timing
    turn_complete: bool
    usage_metadata: UsageMetadata
    def __init__(self, id: _Optional[str] = ..., invocation_id: _Optional[str] = ..., author: _Optional[str] = ..., branch: _Optional[str] = ..., timestamp: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., sequence: _Optional[int] = ..., content: _Optional[_Union[_content_pb2.Content, _Mapping]] = ..., partial: bool = ..., turn_complete: bool = ..., error_code: _Optional[str] = ..., error_message: _Optional[str] = ..., actions: _Optional[_Union[EventActions, _Mapping]] = ..., long_running_tool_ids: _Optional[_Iterable[str]] = ..., usage_metadata: _Optional[_Union[UsageMetadata, _Mapping]] = ..., finish_reason: _Optional[str] = ..., model_version: _Optional[str] = ..., citation_metadata: _Optional[_Union[CitationMetadata, _Mapping]] = ..., grounding_metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., custom_metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., interrupted: bool = ..., cost: _Optional[_Union[Cost, _Mapping]] = ..., timing: _Optional[_Union[_timing_pb2.Timing, _Mapping]] = ...) -> None: ...

class EventActions(_message.Message):
    __slots__ = ["artifact_delta", "compaction", "escalate", "rewind_before_invocation_id", "skip_summarization", "state_delta", "transfer_to_agent"]
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
    REWIND_BEFORE_INVOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    SKIP_SUMMARIZATION_FIELD_NUMBER: _ClassVar[int]
    STATE_DELTA_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_TO_AGENT_FIELD_NUMBER: _ClassVar[int]
    artifact_delta: _containers.ScalarMap[str, int]
    compaction: EventCompaction
    escalate: bool
    rewind_before_invocation_id: str
    skip_summarization: bool
    state_delta: _struct_pb2.Struct
    transfer_to_agent: str
    def __init__(self, state_delta: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., artifact_delta: _Optional[_Mapping[str, int]] = ..., transfer_to_agent: _Optional[str] = ..., escalate: bool = ..., skip_summarization: bool = ..., compaction: _Optional[_Union[EventCompaction, _Mapping]] = ..., rewind_before_invocation_id: _Optional[str] = ...) -> None: ...

class EventCompaction(_message.Message):
    __slots__ = ["authors", "end_sequence", "start_sequence", "summary"]
    AUTHORS_FIELD_NUMBER: _ClassVar[int]
    END_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    START_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    authors: _containers.RepeatedScalarFieldContainer[str]
    end_sequence: int
    start_sequence: int
    summary: _content_pb2.Content
    def __init__(self, start_sequence: _Optional[int] = ..., end_sequence: _Optional[int] = ..., summary: _Optional[_Union[_content_pb2.Content, _Mapping]] = ..., authors: _Optional[_Iterable[str]] = ...) -> None: ...

class ModalityTokenCount(_message.Message):
    __slots__ = ["modality", "token_count"]
    MODALITY_FIELD_NUMBER: _ClassVar[int]
    TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    modality: str
    token_count: int
    def __init__(self, modality: _Optional[str] = ..., token_count: _Optional[int] = ...) -> None: ...

class Spend(_message.Message):
    __slots__ = ["cost", "model_calls", "total_tokens", "usage"]
    COST_FIELD_NUMBER: _ClassVar[int]
    MODEL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    cost: Cost
    model_calls: int
    total_tokens: int
    usage: UsageMetadata
    def __init__(self, usage: _Optional[_Union[UsageMetadata, _Mapping]] = ..., cost: _Optional[_Union[Cost, _Mapping]] = ..., model_calls: _Optional[int] = ..., total_tokens: _Optional[int] = ...) -> None: ...

class UsageMetadata(_message.Message):
    __slots__ = ["cache_creation_token_count", "cache_tokens_details", "cached_content_token_count", "candidates_token_count", "candidates_tokens_details", "estimated", "prompt_token_count", "prompt_tokens_details", "thoughts_token_count", "tool_use_prompt_token_count", "tool_use_prompt_tokens_details", "total_token_count", "traffic_type"]
    CACHED_CONTENT_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    CACHE_CREATION_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    CACHE_TOKENS_DETAILS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_TOKENS_DETAILS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_DETAILS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    THOUGHTS_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOOL_USE_PROMPT_TOKENS_DETAILS_FIELD_NUMBER: _ClassVar[int]
    TOOL_USE_PROMPT_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    TRAFFIC_TYPE_FIELD_NUMBER: _ClassVar[int]
    cache_creation_token_count: int
    cache_tokens_details: _containers.RepeatedCompositeFieldContainer[ModalityTokenCount]
    cached_content_token_count: int
    candidates_token_count: int
    candidates_tokens_details: _containers.RepeatedCompositeFieldContainer[ModalityTokenCount]
    estimated: bool
    prompt_token_count: int
    prompt_tokens_details: _containers.RepeatedCompositeFieldContainer[ModalityTokenCount]
    thoughts_token_count: int
    tool_use_prompt_token_count: int
    tool_use_prompt_tokens_details: _containers.RepeatedCompositeFieldContainer[ModalityTokenCount]
    total_token_count: int
    traffic_type: str
    def __init__(self, prompt_token_count: _Optional[int] = ..., candidates_token_count: _Optional[int] = ..., thoughts_token_count: _Optional[int] = ..., cached_content_token_count: _Optional[int] = ..., tool_use_prompt_token_count: _Optional[int] = ..., total_token_count: _Optional[int] = ..., prompt_tokens_details: _Optional[_Iterable[_Union[ModalityTokenCount, _Mapping]]] = ..., cache_tokens_details: _Optional[_Iterable[_Union[ModalityTokenCount, _Mapping]]] = ..., candidates_tokens_details: _Optional[_Iterable[_Union[ModalityTokenCount, _Mapping]]] = ..., tool_use_prompt_tokens_details: _Optional[_Iterable[_Union[ModalityTokenCount, _Mapping]]] = ..., cache_creation_token_count: _Optional[int] = ..., traffic_type: _Optional[str] = ..., estimated: bool = ...) -> None: ...
