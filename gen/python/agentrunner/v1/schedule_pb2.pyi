from agentrunner.v1 import content_pb2 as _content_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
MISSED_POLICY_RUN_ONCE: MissedPolicy
MISSED_POLICY_SKIP: MissedPolicy
MISSED_POLICY_UNSPECIFIED: MissedPolicy
SCHEDULE_SOURCE_API: ScheduleSource
SCHEDULE_SOURCE_APPS_FILE: ScheduleSource
SCHEDULE_SOURCE_UNSPECIFIED: ScheduleSource

class Schedule(_message.Message):
    __slots__ = ["app_name", "create_time", "cron", "description", "last_error", "last_fire_time", "last_run_id", "missed_policy", "new_message", "next_fire_time", "paused", "schedule_id", "session_id", "source", "time_zone", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_FIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MISSED_POLICY_FIELD_NUMBER: _ClassVar[int]
    NEW_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    create_time: _timestamp_pb2.Timestamp
    cron: str
    description: str
    last_error: str
    last_fire_time: _timestamp_pb2.Timestamp
    last_run_id: str
    missed_policy: MissedPolicy
    new_message: _content_pb2.Content
    next_fire_time: _timestamp_pb2.Timestamp
    paused: bool
    schedule_id: str
    session_id: str
    source: ScheduleSource
    time_zone: str
    user_id: str
    def __init__(self, schedule_id: _Optional[str] = ..., app_name: _Optional[str] = ..., cron: _Optional[str] = ..., time_zone: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., new_message: _Optional[_Union[_content_pb2.Content, _Mapping]] = ..., missed_policy: _Optional[_Union[MissedPolicy, str]] = ..., description: _Optional[str] = ..., source: _Optional[_Union[ScheduleSource, str]] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_fire_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_run_id: _Optional[str] = ..., last_error: _Optional[str] = ..., next_fire_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., paused: bool = ...) -> None: ...

class ScheduleConfig(_message.Message):
    __slots__ = ["cron", "description", "message", "missed_policy", "name", "paused", "session_id", "time_zone", "user_id"]
    CRON_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MISSED_POLICY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    cron: str
    description: str
    message: str
    missed_policy: MissedPolicy
    name: str
    paused: bool
    session_id: str
    time_zone: str
    user_id: str
    def __init__(self, name: _Optional[str] = ..., cron: _Optional[str] = ..., time_zone: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., message: _Optional[str] = ..., missed_policy: _Optional[_Union[MissedPolicy, str]] = ..., description: _Optional[str] = ..., paused: bool = ...) -> None: ...

class MissedPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ScheduleSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
