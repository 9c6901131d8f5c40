from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class Webhook(_message.Message):
    __slots__ = ["url"]
    URL_FIELD_NUMBER: _ClassVar[int]
    url: str
    def __init__(self, url: _Optional[str] = ...) -> None: ...

class WebhookConfig(_message.Message):
    __slots__ = ["secret_env", "url"]
    SECRET_ENV_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    secret_env: str
    url: str
    def __init__(self, url: _Optional[str] = ..., secret_env: _Optional[str] = ...) -> None: ...
