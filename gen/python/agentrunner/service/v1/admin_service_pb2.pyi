from agentrunner.v1 import webhook_delivery_pb2 as _webhook_delivery_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

APP_CHANGE_ADDED: AppChange
APP_CHANGE_CHANGED: AppChange
APP_CHANGE_REMOVED: AppChange
APP_CHANGE_UNCHANGED: AppChange
APP_CHANGE_UNSPECIFIED: AppChange
DESCRIPTOR: _descriptor.FileDescriptor

class AppReload(_message.Message):
    __slots__ = ["change", "config_version", "name"]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    CONFIG_VERSION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    change: AppChange
    config_version: str
    name: str
    def __init__(self, name: _Optional[str] = ..., change: _Optional[_Union[AppChange, str]] = ..., config_version: _Optional[str] = ...) -> None: ...

class BackupRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class BackupResponse(_message.Message):
    __slots__ = ["chunk", "sha256", "size"]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    chunk: bytes
    sha256: str
    size: int
    def __init__(self, chunk: _Optional[bytes] = ..., size: _Optional[int] = ..., sha256: _Optional[str] = ...) -> None: ...

class ListWebhookDeliveriesRequest(_message.Message):
    __slots__ = ["page_size", "state"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    state: _webhook_delivery_pb2.WebhookDeliveryState
    def __init__(self, state: _Optional[_Union[_webhook_delivery_pb2.WebhookDeliveryState, str]] = ..., page_size: _Optional[int] = ...) -> None: ...

class ListWebhookDeliveriesResponse(_message.Message):
    __slots__ = ["deliveries"]
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    deliveries: _containers.RepeatedCompositeFieldContainer[_webhook_delivery_pb2.WebhookDelivery]
    def __init__(self, deliveries: _Optional[_Iterable[_Union[_webhook_delivery_pb2.WebhookDelivery, _Mapping]]] = ...) -> None: ...

class ReloadAppsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ReloadAppsResponse(_message.Message):
    __slots__ = ["apps"]
    APPS_FIELD_NUMBER: _ClassVar[int]
    apps: _containers.RepeatedCompositeFieldContainer[AppReload]
    def __init__(self, apps: _Optional[_Iterable[_Union[AppReload, _Mapping]]] = ...) -> None: ...

class AppChange(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
