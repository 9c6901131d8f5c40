from google.protobuf import any_pb2 as _any_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
STREAMING_MODE_NONE: StreamingMode
STREAMING_MODE_SSE: StreamingMode
STREAMING_MODE_UNSPECIFIED: StreamingMode

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
