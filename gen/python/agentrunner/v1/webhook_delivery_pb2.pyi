from agentrunner.v1 import run_pb2 as _run_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
WEBHOOK_DELIVERY_STATE_FAILED: WebhookDeliveryState
WEBHOOK_DELIVERY_STATE_PENDING: WebhookDeliveryState
WEBHOOK_DELIVERY_STATE_UNSPECIFIED: WebhookDeliveryState

class WebhookDelivery(_message.Message):
    __slots__ = ["attempts", "claim", "create_time", "delivery_id", "last_error", "lease_expire_time", "next_attempt_time", "run", "state", "url"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CLAIM_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_TIME_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    attempts: int
    claim: int
    create_time: _timestamp_pb2.Timestamp
    delivery_id: str
    last_error: str
    lease_expire_time: _timestamp_pb2.Timestamp
    next_attempt_time: _timestamp_pb2.Timestamp
    run: _run_pb2.Run
    state: WebhookDeliveryState
    url: str
    def __init__(self, delivery_id: _Optional[str] = ..., url: _Optional[str] = ..., run: _Optional[_Union[_run_pb2.Run, _Mapping]] = ..., state: _Optional[_Union[WebhookDeliveryState, str]] = ..., attempts: _Optional[int] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., next_attempt_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_error: _Optional[str] = ..., lease_expire_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., claim: _Optional[int] = ...) -> None: ...

class WebhookDeliveryState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
