from agentrunner.v1 import event_pb2 as _event_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DailyUsage(_message.Message):
    __slots__ = ["date", "model", "spend"]
    DATE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SPEND_FIELD_NUMBER: _ClassVar[int]
    date: str
    model: str
    spend: _event_pb2.Spend
    def __init__(self, date: _Optional[str] = ..., model: _Optional[str] = ..., spend: _Optional[_Union[_event_pb2.Spend, _Mapping]] = ...) -> None: ...

class GetUsageRequest(_message.Message):
    __slots__ = ["app_name", "end_date", "start_date", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    END_DATE_FIELD_NUMBER: _ClassVar[int]
    START_DATE_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    end_date: str
    start_date: str
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., start_date: _Optional[str] = ..., end_date: _Optional[str] = ...) -> None: ...

class GetUsageResponse(_message.Message):
    __slots__ = ["days", "end_date", "start_date", "total"]
    DAYS_FIELD_NUMBER: _ClassVar[int]
    END_DATE_FIELD_NUMBER: _ClassVar[int]
    START_DATE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    days: _containers.RepeatedCompositeFieldContainer[DailyUsage]
    end_date: str
    start_date: str
    total: _event_pb2.Spend
    def __init__(self, days: _Optional[_Iterable[_Union[DailyUsage, _Mapping]]] = ..., total: _Optional[_Union[_event_pb2.Spend, _Mapping]] = ..., start_date: _Optional[str] = ..., end_date: _Optional[str] = ...) -> None: ...
