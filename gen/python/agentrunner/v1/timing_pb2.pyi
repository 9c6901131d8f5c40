from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ModelAttempt(_message.Message):
    __slots__ = ["duration", "error_code", "model", "start_time", "time_to_first_chunk"]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    TIME_TO_FIRST_CHUNK_FIELD_NUMBER: _ClassVar[int]
    duration: _duration_pb2.Duration
    error_code: str
    model: str
    start_time: _timestamp_pb2.Timestamp
    time_to_first_chunk: _duration_pb2.Duration
    def __init__(self, model: _Optional[str] = ..., start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., time_to_first_chunk: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., error_code: _Optional[str] = ...) -> None: ...

class Timing(_message.Message):
    __slots__ = ["attempts", "duration", "start_time", "time_to_first_chunk"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    TIME_TO_FIRST_CHUNK_FIELD_NUMBER: _ClassVar[int]
    attempts: _containers.RepeatedCompositeFieldContainer[ModelAttempt]
    duration: _duration_pb2.Duration
    start_time: _timestamp_pb2.Timestamp
    time_to_first_chunk: _duration_pb2.Duration
    def __init__(self, start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., time_to_first_chunk: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., attempts: _Optional[_Iterable[_Union[ModelAttempt, _Mapping]]] = ...) -> None: ...
