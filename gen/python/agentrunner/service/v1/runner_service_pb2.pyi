from agentrunner.v1 import agent_pb2 as _agent_pb2
from agentrunner.v1 import content_pb2 as _content_pb2
from agentrunner.v1 import event_pb2 as _event_pb2
from agentrunner.v1 import run_pb2 as _run_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListAppsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListAppsResponse(_message.Message):
    __slots__ = ["apps"]
    APPS_FIELD_NUMBER: _ClassVar[int]
    apps: _containers.RepeatedCompositeFieldContainer[_agent_pb2.App]
    def __init__(self, apps: _Optional[_Iterable[_Union[_agent_pb2.App, _Mapping]]] = ...) -> None: ...

class RunRequest(_message.Message):
    __slots__ = ["app_name", "new_message", "run_config", "session_id", "state_delta", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    NEW_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RUN_CONFIG_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_DELTA_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    new_message: _content_pb2.Content
    run_config: _run_pb2.RunConfig
    session_id: str
    state_delta: _struct_pb2.Struct
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., new_message: _Optional[_Union[_content_pb2.Content, _Mapping]] = ..., state_delta: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., run_config: _Optional[_Union[_run_pb2.RunConfig, _Mapping]] = ...) -> None: ...

class RunResponse(_message.Message):
    __slots__ = ["error", "event"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    error: _run_pb2.Status
    event: _event_pb2.Event
    def __init__(self, event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ..., error: _Optional[_Union[_run_pb2.Status, _Mapping]] = ...) -> None: ...
