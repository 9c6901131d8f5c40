from agentrunner.v1 import schedule_pb2 as _schedule_pb2
from agentrunner.v1 import webhook_pb2 as _webhook_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
INCLUDE_CONTENTS_DEFAULT: IncludeContents
INCLUDE_CONTENTS_NONE: IncludeContents
INCLUDE_CONTENTS_UNSPECIFIED: IncludeContents

class AgentConfig(_message.Message):
    __slots__ = ["description", "llm", "loop", "name", "parallel", "remote_a2a", "sequential", "sub_agents"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    LLM_FIELD_NUMBER: _ClassVar[int]
    LOOP_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_FIELD_NUMBER: _ClassVar[int]
    REMOTE_A2A_FIELD_NUMBER: _ClassVar[int]
    SEQUENTIAL_FIELD_NUMBER: _ClassVar[int]
    SUB_AGENTS_FIELD_NUMBER: _ClassVar[int]
    description: str
    llm: LlmAgentConfig
    loop: LoopAgentConfig
    name: str
    parallel: ParallelAgentConfig
    remote_a2a: RemoteA2aAgentConfig
    sequential: SequentialAgentConfig
    sub_agents: _containers.RepeatedCompositeFieldContainer[AgentConfig]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., sub_agents: _Optional[_Iterable[_Union[AgentConfig, _Mapping]]] = ..., llm: _Optional[_Union[LlmAgentConfig, _Mapping]] = ..., sequential: _Optional[_Union[SequentialAgentConfig, _Mapping]] = ..., parallel: _Optional[_Union[ParallelAgentConfig, _Mapping]] = ..., loop: _Optional[_Union[LoopAgentConfig, _Mapping]] = ..., remote_a2a: _Optional[_Union[RemoteA2aAgentConfig, _Mapping]] = ...) -> None: ...

class AppConfig(_message.Message):
    __slots__ = ["budgets", "compaction", "context_cache", "description", "function_tools", "mcp_servers", "memory", "name", "root_agent", "schedules", "webhook"]
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    COMPACTION_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_CACHE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_TOOLS_FIELD_NUMBER: _ClassVar[int]
    MCP_SERVERS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROOT_AGENT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    WEBHOOK_FIELD_NUMBER: _ClassVar[int]
    budgets: BudgetsConfig
    compaction: CompactionConfig
    context_cache: ContextCacheConfig
    description: str
    function_tools: _containers.RepeatedCompositeFieldContainer[FunctionToolConfig]
    mcp_servers: _containers.RepeatedCompositeFieldContainer[McpServerConfig]
    memory: MemoryConfig
    name: str
    root_agent: AgentConfig
    schedules: _containers.RepeatedCompositeFieldContainer[_schedule_pb2.ScheduleConfig]
    webhook: _webhook_pb2.WebhookConfig
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., root_agent: _Optional[_Union[AgentConfig, _Mapping]] = ..., function_tools: _Optional[_Iterable[_Union[FunctionToolConfig, _Mapping]]] = ..., mcp_servers: _Optional[_Iterable[_Union[McpServerConfig, _Mapping]]] = ..., compaction: _Optional[_Union[CompactionConfig, _Mapping]] = ..., memory: _Optional[_Union[MemoryConfig, _Mapping]] = ..., context_cache: _Optional[_Union[ContextCacheConfig, _Mapping]] = ..., budgets: _Optional[_Union[BudgetsConfig, _Mapping]] = ..., webhook: _Optional[_Union[_webhook_pb2.WebhookConfig, _Mapping]] = ..., schedules: _Optional[_Iterable[_Union[_schedule_pb2.ScheduleConfig, _Mapping]]] = ...) -> None: ...

class AppsConfig(_message.Message):
    __slots__ = ["apps", "models"]
    APPS_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    apps: _containers.RepeatedCompositeFieldContainer[AppConfig]
    models: _containers.RepeatedCompositeFieldContainer[ModelConfig]
    def __init__(self, apps: _Optional[_Iterable[_Union[AppConfig, _Mapping]]] = ..., models: _Optional[_Iterable[_Union[ModelConfig, _Mapping]]] = ...) -> None: ...

class BudgetLimit(_message.Message):
    __slots__ = ["cost", "tokens"]
    COST_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    cost: float
    tokens: int
    def __init__(self, tokens: _Optional[int] = ..., cost: _Optional[float] = ...) -> None: ...

class BudgetsConfig(_message.Message):
    __slots__ = ["app_daily", "run", "session", "user_daily"]
    APP_DAILY_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    USER_DAILY_FIELD_NUMBER: _ClassVar[int]
    app_daily: BudgetLimit
    run: BudgetLimit
    session: BudgetLimit
    user_daily: BudgetLimit
    def __init__(self, run: _Optional[_Union[BudgetLimit, _Mapping]] = ..., session: _Optional[_Union[BudgetLimit, _Mapping]] = ..., user_daily: _Optional[_Union[BudgetLimit, _Mapping]] = ..., app_daily: _Optional[_Union[BudgetLimit, _Mapping]] = ...) -> None: ...

class CompactionConfig(_message.Message):
    __slots__ = ["instruction", "interval", "max_events", "model", "overlap", "token_threshold"]
    INSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    MAX_EVENTS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    TOKEN_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    instruction: str
    interval: int
    max_events: int
    model: str
    overlap: int
    token_threshold: int
    def __init__(self, interval: _Optional[int] = ..., overlap: _Optional[int] = ..., token_threshold: _Optional[int] = ..., model: _Optional[str] = ..., instruction: _Optional[str] = ..., max_events: _Optional[int] = ...) -> None: ...

class ContextCacheConfig(_message.Message):
    __slots__ = ["cache_intervals", "min_tokens", "ttl"]
    CACHE_INTERVALS_FIELD_NUMBER: _ClassVar[int]
    MIN_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    cache_intervals: int
    min_tokens: int
    ttl: str
    def __init__(self, cache_intervals: _Optional[int] = ..., ttl: _Optional[str] = ..., min_tokens: _Optional[int] = ...) -> None: ...

class FunctionToolConfig(_message.Message):
    __slots__ = ["description", "name", "parameters", "response"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    description: str
    name: str
    parameters: _struct_pb2.Struct
    response: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., response: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class LlmAgentConfig(_message.Message):
    __slots__ = ["disallow_transfer_to_parent", "disallow_transfer_to_peers", "function_tools", "include_contents", "instruction", "max_output_tokens", "mcp", "model", "output_key", "require_confirmation", "temperature", "tools"]
    DISALLOW_TRANSFER_TO_PARENT_FIELD_NUMBER: _ClassVar[int]
    DISALLOW_TRANSFER_TO_PEERS_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_TOOLS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_CONTENTS_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MCP_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_KEY_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    disallow_transfer_to_parent: bool
    disallow_transfer_to_peers: bool
    function_tools: _containers.RepeatedCompositeFieldContainer[FunctionToolConfig]
    include_contents: IncludeContents
    instruction: str
    max_output_tokens: int
    mcp: _containers.RepeatedCompositeFieldContainer[McpToolsConfig]
    model: str
    output_key: str
    require_confirmation: _containers.RepeatedScalarFieldContainer[str]
    temperature: float
    tools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, model: _Optional[str] = ..., instruction: _Optional[str] = ..., output_key: _Optional[str] = ..., disallow_transfer_to_parent: bool = ..., disallow_transfer_to_peers: bool = ..., tools: _Optional[_Iterable[str]] = ..., include_contents: _Optional[_Union[IncludeContents, str]] = ..., temperature: _Optional[float] = ..., max_output_tokens: _Optional[int] = ..., function_tools: _Optional[_Iterable[_Union[FunctionToolConfig, _Mapping]]] = ..., require_confirmation: _Optional[_Iterable[str]] = ..., mcp: _Optional[_Iterable[_Union[McpToolsConfig, _Mapping]]] = ...) -> None: ...

class LoopAgentConfig(_message.Message):
    __slots__ = ["max_iterations"]
    MAX_ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    max_iterations: int
    def __init__(self, max_iterations: _Optional[int] = ...) -> None: ...

class McpServerConfig(_message.Message):
    __slots__ = ["args", "command", "env", "header_env", "name", "optional", "timeout", "url"]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    HEADER_ENV_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    args: _containers.RepeatedScalarFieldContainer[str]
    command: str
    env: _containers.RepeatedScalarFieldContainer[str]
    header_env: _containers.RepeatedScalarFieldContainer[str]
    name: str
    optional: bool
    timeout: str
    url: str
    def __init__(self, name: _Optional[str] = ..., command: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., env: _Optional[_Iterable[str]] = ..., url: _Optional[str] = ..., header_env: _Optional[_Iterable[str]] = ..., optional: bool = ..., timeout: _Optional[str] = ...) -> None: ...

class McpToolsConfig(_message.Message):
    __slots__ = ["server", "tools"]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    server: str
    tools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, server: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ...) -> None: ...

class MemoryConfig(_message.Message):
    __slots__ = ["add_sessions"]
    ADD_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    add_sessions: bool
    def __init__(self, add_sessions: bool = ...) -> None: ...

class ModelConfig(_message.Message):
    __slots__ = ["api_key_env", "base_url", "fallbacks", "idle_timeout", "max_output_tokens", "model", "name", "offline", "price", "provider", "retry", "timeout"]
    API_KEY_ENV_FIELD_NUMBER: _ClassVar[int]
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    FALLBACKS_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    api_key_env: str
    base_url: str
    fallbacks: _containers.RepeatedScalarFieldContainer[str]
    idle_timeout: str
    max_output_tokens: int
    model: str
    name: str
    offline: OfflineModelConfig
    price: ModelPrice
    provider: str
    retry: RetryConfig
    timeout: str
    def __init__(self, name: _Optional[str] = ..., provider: _Optional[str] = ..., model: _Optional[str] = ..., base_url: _Optional[str] = ..., api_key_env: _Optional[str] = ..., timeout: _Optional[str] = ..., retry: _Optional[_Union[RetryConfig, _Mapping]] = ..., fallbacks: _Optional[_Iterable[str]] = ..., idle_timeout: _Optional[str] = ..., offline: _Optional[_Union[OfflineModelConfig, _Mapping]] = ..., price: _Optional[_Union[ModelPrice, _Mapping]] = ..., max_output_tokens: _Optional[int] = ...) -> None: ...

class ModelPrice(_message.Message):
    __slots__ = ["cache_write", "cached_input", "currency", "input", "output", "thoughts"]
    CACHED_INPUT_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    THOUGHTS_FIELD_NUMBER: _ClassVar[int]
    cache_write: float
    cached_input: float
    currency: str
    input: float
    output: float
    thoughts: float
    def __init__(self, currency: _Optional[str] = ..., input: _Optional[float] = ..., output: _Optional[float] = ..., cached_input: _Optional[float] = ..., cache_write: _Optional[float] = ..., thoughts: _Optional[float] = ...) -> None: ...

class OfflineModelConfig(_message.Message):
    __slots__ = ["chunk_delay", "chunks", "first_chunk_delay"]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_DELAY_FIELD_NUMBER: _ClassVar[int]
    FIRST_CHUNK_DELAY_FIELD_NUMBER: _ClassVar[int]
    chunk_delay: str
    chunks: int
    first_chunk_delay: str
    def __init__(self, first_chunk_delay: _Optional[str] = ..., chunk_delay: _Optional[str] = ..., chunks: _Optional[int] = ...) -> None: ...

class ParallelAgentConfig(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class RemoteA2aAgentConfig(_message.Message):
    __slots__ = ["card", "card_url", "header_env", "header_hosts", "max_card_bytes", "max_history_bytes", "max_history_events", "optional", "timeout"]
    CARD_FIELD_NUMBER: _ClassVar[int]
    CARD_URL_FIELD_NUMBER: _ClassVar[int]
    HEADER_ENV_FIELD_NUMBER: _ClassVar[int]
    HEADER_HOSTS_FIELD_NUMBER: _ClassVar[int]
    MAX_CARD_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_HISTORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_HISTORY_EVENTS_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    card: _struct_pb2.Struct
    card_url: str
    header_env: str
    header_hosts: _containers.RepeatedScalarFieldContainer[str]
    max_card_bytes: int
    max_history_bytes: int
    max_history_events: int
    optional: bool
    timeout: str
    def __init__(self, card_url: _Optional[str] = ..., card: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., header_env: _Optional[str] = ..., timeout: _Optional[str] = ..., optional: bool = ..., header_hosts: _Optional[_Iterable[str]] = ..., max_card_bytes: _Optional[int] = ..., max_history_events: _Optional[int] = ..., max_history_bytes: _Optional[int] = ...) -> None: ...

class RetryConfig(_message.Message):
    __slots__ = ["initial_backoff", "max_attempts", "max_backoff", "max_elapsed"]
    INITIAL_BACKOFF_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    MAX_BACKOFF_FIELD_NUMBER: _ClassVar[int]
    MAX_ELAPSED_FIELD_NUMBER: _ClassVar[int]
    initial_backoff: str
    max_attempts: int
    max_backoff: str
    max_elapsed: str
    def __init__(self, max_attempts: _Optional[int] = ..., initial_backoff: _Optional[str] = ..., max_backoff: _Optional[str] = ..., max_elapsed: _Optional[str] = ...) -> None: ...

class SequentialAgentConfig(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class IncludeContents(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
