from agentrunner.v1 import artifact_pb2 as _artifact_pb2
from agentrunner.v1 import content_pb2 as _content_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DeleteArtifactRequest(_message.Message):
    __slots__ = ["app_name", "filename", "session_id", "user_id", "version"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    filename: str
    session_id: str
    user_id: str
    version: int
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., filename: _Optional[str] = ..., version: _Optional[int] = ...) -> None: ...

class DeleteArtifactResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListArtifactVersionsRequest(_message.Message):
    __slots__ = ["app_name", "filename", "page_size", "page_token", "session_id", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    filename: str
    page_size: int
    page_token: str
    session_id: str
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., filename: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListArtifactVersionsResponse(_message.Message):
    __slots__ = ["next_page_token", "versions"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    versions: _containers.RepeatedCompositeFieldContainer[_artifact_pb2.ArtifactVersion]
    def __init__(self, versions: _Optional[_Iterable[_Union[_artifact_pb2.ArtifactVersion, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListArtifactsRequest(_message.Message):
    __slots__ = ["app_name", "page_size", "page_token", "session_id", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    page_size: int
    page_token: str
    session_id: str
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListArtifactsResponse(_message.Message):
    __slots__ = ["artifacts", "next_page_token"]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    artifacts: _containers.RepeatedCompositeFieldContainer[_artifact_pb2.ArtifactVersion]
    next_page_token: str
    def __init__(self, artifacts: _Optional[_Iterable[_Union[_artifact_pb2.ArtifactVersion, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class LoadArtifactRequest(_message.Message):
    __slots__ = ["app_name", "filename", "session_id", "user_id", "version"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    filename: str
    session_id: str
    user_id: str
    version: int
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., filename: _Optional[str] = ..., version: _Optional[int] = ...) -> None: ...

class LoadArtifactResponse(_message.Message):
    __slots__ = ["artifact", "artifact_version"]
    ARTIFACT_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_VERSION_FIELD_NUMBER: _ClassVar[int]
    artifact: _content_pb2.Part
    artifact_version: _artifact_pb2.ArtifactVersion
    def __init__(self, artifact: _Optional[_Union[_content_pb2.Part, _Mapping]] = ..., artifact_version: _Optional[_Union[_artifact_pb2.ArtifactVersion, _Mapping]] = ...) -> None: ...

class SaveArtifactRequest(_message.Message):
    __slots__ = ["app_name", "artifact", "filename", "session_id", "user_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    artifact: _content_pb2.Part
    filename: str
    session_id: str
    user_id: str
    def __init__(self, app_name: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., filename: _Optional[str] = ..., artifact: _Optional[_Union[_content_pb2.Part, _Mapping]] = ...) -> None: ...

class SaveArtifactResponse(_message.Message):
    __slots__ = ["artifact_version", "version"]
    ARTIFACT_VERSION_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    artifact_version: _artifact_pb2.ArtifactVersion
    version: int
    def __init__(self, version: _Optional[int] = ..., artifact_version: _Optional[_Union[_artifact_pb2.ArtifactVersion, _Mapping]] = ...) -> None: ...
