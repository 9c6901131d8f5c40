from agentrunner.v1 import event_pb2 as _event_pb2
from agentrunner.v1 import session_pb2 as _session_pb2
from agentrunner.v1 import tool_call_pb2 as _tool_call_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AppendEventRequest(_message.Message):
    __slots__ = ["app_name", "event", "session_id", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    event: _event_pb2.Event
    session_id: str
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ...) -> None: ...

class AppendEventResponse(_message.Message):
    __slots__ = ["event"]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: _event_pb2.Event
    def __init__(self, event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ...) -> None: ...

class CreateSessionRequest(_message.Message):
    __slots__ = ["app_name", "session_id", "state", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    session_id: str
    state: _struct_pb2.Struct
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., state: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class CreateSessionResponse(_message.Message):
    __slots__ = ["session"]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: _session_pb2.Session
    def __init__(self, session: _Optional[_Union[_session_pb2.Session, _Mapping]] = ...) -> None: ...

class DeleteSessionRequest(_message.Message):
    __slots__ = ["app_name", "session_id", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    session_id: str
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class DeleteSessionResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ForkSessionRequest(_message.Message):
    __slots__ = ["app_name", "new_session_id", "new_user_id", "session_id", "up_to_sequence", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    NEW_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    NEW_USER_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    UP_TO_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    new_session_id: str
    new_user_id: str
    session_id: str
    up_to_sequence: int
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., up_to_sequence: _Optional[int] = ..., new_user_id: _Optional[str] = ..., new_session_id: _Optional[str] = ...) -> None: ...

class ForkSessionResponse(_message.Message):
    __slots__ = ["session"]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: _session_pb2.Session
    def __init__(self, session: _Optional[_Union[_session_pb2.Session, _Mapping]] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ["after_sequence", "after_time", "app_name", "num_recent_events", "session_id", "user_id"]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    AFTER_TIME_FIELD_NUMBER: _ClassVar[int]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    NUM_RECENT_EVENTS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    after_sequence: int
    after_time: _timestamp_pb2.Timestamp
    app_name: str
    num_recent_events: int
    session_id: str
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., num_recent_events: _Optional[int] = ..., after_sequence: _Optional[int] = ..., after_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetSessionResponse(_message.Message):
    __slots__ = ["events", "omitted_events", "session"]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    OMITTED_EVENTS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_event_pb2.Event]
    omitted_events: int
    session: _session_pb2.Session
    def __init__(self, session: _Optional[_Union[_session_pb2.Session, _Mapping]] = ..., events: _Optional[_Iterable[_Union[_event_pb2.Event, _Mapping]]] = ..., omitted_events: _Optional[int] = ...) -> None: ...

class GetStateHistoryRequest(_message.Message):
    __slots__ = ["app_name", "key", "page_size", "page_token", "session_id", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    key: str
    page_size: int
    page_token: str
    session_id: str
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., key: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GetStateHistoryResponse(_message.Message):
    __slots__ = ["changes", "next_page_token"]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[StateChange]
    next_page_token: str
    def __init__(self, changes: _Optional[_Iterable[_Union[StateChange, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListEventsRequest(_message.Message):
    __slots__ = ["after_sequence", "after_time", "app_name", "author", "errors_only", "function_name", "page_size", "page_token", "query", "run_id", "session_id", "user_id"]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    AFTER_TIME_FIELD_NUMBER: _ClassVar[int]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    ERRORS_ONLY_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    after_sequence: int
    after_time: _timestamp_pb2.Timestamp
    app_name: str
    author: str
    errors_only: bool
    function_name: str
    page_size: int
    page_token: str
    query: str
    run_id: str
    session_id: str
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., after_sequence: _Optional[int] = ..., after_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., query: _Optional[str] = ..., author: _Optional[str] = ..., function_name: _Optional[str] = ..., errors_only: bool = ..., run_id: _Optional[str] = ...) -> None: ...

class ListEventsResponse(_message.Message):
    __slots__ = ["events", "next_page_token"]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_event_pb2.Event]
    next_page_token: str
    def __init__(self, events: _Optional[_Iterable[_Union[_event_pb2.Event, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ["app_name", "page_size", "page_token", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    page_size: int
    page_token: str
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ["next_page_token", "sessions"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    sessions: _containers.RepeatedCompositeFieldContainer[_session_pb2.Session]
    def __init__(self, sessions: _Optional[_Iterable[_Union[_session_pb2.Session, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListToolCallsRequest(_message.Message):
    __slots__ = ["app_name", "session_id", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    session_id: str
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class ListToolCallsResponse(_message.Message):
    __slots__ = ["tool_calls"]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    tool_calls: _containers.RepeatedCompositeFieldContainer[_tool_call_pb2.ToolCall]
    def __init__(self, tool_calls: _Optional[_Iterable[_Union[_tool_call_pb2.ToolCall, _Mapping]]] = ...) -> None: ...

class ListUsersRequest(_message.Message):
    __slots__ = ["app_name", "page_size", "page_token"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    page_size: int
    page_token: str
    def __init__(self, app_name: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListUsersResponse(_message.Message):
    __slots__ = ["next_page_token", "users"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    users: _containers.RepeatedCompositeFieldContainer[UserSummary]
    def __init__(self, users: _Optional[_Iterable[_Union[UserSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RewindSessionRequest(_message.Message):
    __slots__ = ["app_name", "before_invocation_id", "session_id", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    BEFORE_INVOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    before_invocation_id: str
    session_id: str
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., before_invocation_id: _Optional[str] = ...) -> None: ...

class RewindSessionResponse(_message.Message):
    __slots__ = ["event", "session"]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    event: _event_pb2.Event
    session: _session_pb2.Session
    def __init__(self, event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ..., session: _Optional[_Union[_session_pb2.Session, _Mapping]] = ...) -> None: ...

class StateChange(_message.Message):
    __slots__ = ["author", "event_id", "invocation_id", "new_value", "old_value", "sequence", "time"]
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    INVOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    NEW_VALUE_FIELD_NUMBER: _ClassVar[int]
    OLD_VALUE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    author: str
    event_id: str
    invocation_id: str
    new_value: _struct_pb2.Value
    old_value: _struct_pb2.Value
    sequence: int
    time: _timestamp_pb2.Timestamp
    def __init__(self, sequence: _Optional[int] = ..., event_id: _Optional[str] = ..., author: _Optional[str] = ..., invocation_id: _Optional[str] = ..., time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., old_value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., new_value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...

class UserSummary(_message.Message):
    __slots__ = ["last_update_time", "session_count", "user_id"]
    LAST_UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    SESSION_COUNT_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    last_update_time: _timestamp_pb2.Timestamp
    session_count: int
    user_id: str
    def __init__(self, user_id: _Optional[str] = ..., session_count: _Optional[int] = ..., last_update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
