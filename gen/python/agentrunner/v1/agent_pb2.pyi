from agentrunner.v1 import config_pb2 as _config_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

AGENT_KIND_CUSTOM: AgentKind
AGENT_KIND_LLM: AgentKind
AGENT_KIND_LOOP: AgentKind
AGENT_KIND_PARALLEL: AgentKind
AGENT_KIND_REMOTE_A2A: AgentKind
AGENT_KIND_SEQUENTIAL: AgentKind
AGENT_KIND_UNSPECIFIED: AgentKind
DESCRIPTOR: _descriptor.FileDescriptor
TOOL_KIND_BUILTIN: ToolKind
TOOL_KIND_CUSTOM: ToolKind
TOOL_KIND_FUNCTION: ToolKind
TOOL_KIND_MCP: ToolKind
TOOL_KIND_UNSPECIFIED: ToolKind

class AgentInfo(_message.Message):
    __slots__ = ["description", "disallow_transfer_to_parent", "disallow_transfer_to_peers", "kind", "max_iterations", "model", "name", "sub_agents", "tool_details", "tools", "transfer_targets"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DISALLOW_TRANSFER_TO_PARENT_FIELD_NUMBER: _ClassVar[int]
    DISALLOW_TRANSFER_TO_PEERS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MAX_ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUB_AGENTS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_DETAILS_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_TARGETS_FIELD_NUMBER: _ClassVar[int]
    description: str
    disallow_transfer_to_parent: bool
    disallow_transfer_to_peers: bool
    kind: AgentKind
    max_iterations: int
    model: str
    name: str
    sub_agents: _containers.RepeatedCompositeFieldContainer[AgentInfo]
    tool_details: _containers.RepeatedCompositeFieldContainer[ToolInfo]
    tools: _containers.RepeatedScalarFieldContainer[str]
    transfer_targets: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., kind: _Optional[_Union[AgentKind, str]] = ..., model: _Optional[str] = ..., disallow_transfer_to_parent: bool = ..., disallow_transfer_to_peers: bool = ..., max_iterations: _Optional[int] = ..., sub_agents: _Optional[_Iterable[_Union[AgentInfo, _Mapping]]] = ..., tools: _Optional[_Iterable[str]] = ..., transfer_targets: _Optional[_Iterable[str]] = ..., tool_details: _Optional[_Iterable[_Union[ToolInfo, _Mapping]]] = ...) -> None: ...

class App(_message.Message):
    __slots__ = ["budgets", "config_version", "currency", "description", "name", "root_agent", "unavailable_reason"]
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_VERSION_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROOT_AGENT_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_REASON_FIELD_NUMBER: _ClassVar[int]
    budgets: _config_pb2.BudgetsConfig
    config_version: str
    currency: str
    description: str
    name: str
    root_agent: AgentInfo
    unavailable_reason: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., root_agent: _Optional[_Union[AgentInfo, _Mapping]] = ..., unavailable_reason: _Optional[str] = ..., budgets: _Optional[_Union[_config_pb2.BudgetsConfig, _Mapping]] = ..., currency: _Optional[str] = ..., config_version: _Optional[str] = ...) -> None: ...

class ToolInfo(_message.Message):
    __slots__ = ["description", "kind", "name", "parameters", "require_confirmation"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    description: str
    kind: ToolKind
    name: str
    parameters: _struct_pb2.Struct
    require_confirmation: bool
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[_Union[ToolKind, str]] = ..., description: _Optional[str] = ..., parameters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., require_confirmation: bool = ...) -> None: ...

class AgentKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ToolKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
