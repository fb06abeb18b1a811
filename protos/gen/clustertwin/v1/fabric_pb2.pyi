from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FabricSystem(_message.Message):
    __slots__ = ("name", "guid", "type", "role", "model", "vendor", "lid", "ports")
    NAME_FIELD_NUMBER: _ClassVar[int]
    GUID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    VENDOR_FIELD_NUMBER: _ClassVar[int]
    LID_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    guid: str
    type: str
    role: str
    model: str
    vendor: str
    lid: int
    ports: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., guid: _Optional[str] = ..., type: _Optional[str] = ..., role: _Optional[str] = ..., model: _Optional[str] = ..., vendor: _Optional[str] = ..., lid: _Optional[int] = ..., ports: _Optional[_Iterable[str]] = ...) -> None: ...

class FabricPort(_message.Message):
    __slots__ = ("name", "system", "node", "number", "guid", "node_guid", "lid", "logical_state", "physical_state", "active_width", "active_speed", "computer", "peer_node", "peer_port", "peer_guid", "peer_lid", "disabled")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    GUID_FIELD_NUMBER: _ClassVar[int]
    NODE_GUID_FIELD_NUMBER: _ClassVar[int]
    LID_FIELD_NUMBER: _ClassVar[int]
    LOGICAL_STATE_FIELD_NUMBER: _ClassVar[int]
    PHYSICAL_STATE_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_WIDTH_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_SPEED_FIELD_NUMBER: _ClassVar[int]
    COMPUTER_FIELD_NUMBER: _ClassVar[int]
    PEER_NODE_FIELD_NUMBER: _ClassVar[int]
    PEER_PORT_FIELD_NUMBER: _ClassVar[int]
    PEER_GUID_FIELD_NUMBER: _ClassVar[int]
    PEER_LID_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    name: str
    system: str
    node: str
    number: int
    guid: str
    node_guid: str
    lid: int
    logical_state: str
    physical_state: str
    active_width: str
    active_speed: str
    computer: bool
    peer_node: str
    peer_port: int
    peer_guid: str
    peer_lid: int
    disabled: bool
    def __init__(self, name: _Optional[str] = ..., system: _Optional[str] = ..., node: _Optional[str] = ..., number: _Optional[int] = ..., guid: _Optional[str] = ..., node_guid: _Optional[str] = ..., lid: _Optional[int] = ..., logical_state: _Optional[str] = ..., physical_state: _Optional[str] = ..., active_width: _Optional[str] = ..., active_speed: _Optional[str] = ..., computer: _Optional[bool] = ..., peer_node: _Optional[str] = ..., peer_port: _Optional[int] = ..., peer_guid: _Optional[str] = ..., peer_lid: _Optional[int] = ..., disabled: _Optional[bool] = ...) -> None: ...

class FabricLink(_message.Message):
    __slots__ = ("source_node", "source_port", "source_guid", "destination_node", "destination_port", "destination_guid", "speed", "active")
    SOURCE_NODE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_PORT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_GUID_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_NODE_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_PORT_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_GUID_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    source_node: str
    source_port: int
    source_guid: str
    destination_node: str
    destination_port: int
    destination_guid: str
    speed: str
    active: bool
    def __init__(self, source_node: _Optional[str] = ..., source_port: _Optional[int] = ..., source_guid: _Optional[str] = ..., destination_node: _Optional[str] = ..., destination_port: _Optional[int] = ..., destination_guid: _Optional[str] = ..., speed: _Optional[str] = ..., active: _Optional[bool] = ...) -> None: ...

class FabricEndpoint(_message.Message):
    __slots__ = ("node", "server", "rail", "lid")
    NODE_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    RAIL_FIELD_NUMBER: _ClassVar[int]
    LID_FIELD_NUMBER: _ClassVar[int]
    node: str
    server: str
    rail: int
    lid: int
    def __init__(self, node: _Optional[str] = ..., server: _Optional[str] = ..., rail: _Optional[int] = ..., lid: _Optional[int] = ...) -> None: ...

class FabricRouteHop(_message.Message):
    __slots__ = ("switch_name", "switch_guid", "in_port", "out_port")
    SWITCH_NAME_FIELD_NUMBER: _ClassVar[int]
    SWITCH_GUID_FIELD_NUMBER: _ClassVar[int]
    IN_PORT_FIELD_NUMBER: _ClassVar[int]
    OUT_PORT_FIELD_NUMBER: _ClassVar[int]
    switch_name: str
    switch_guid: str
    in_port: int
    out_port: int
    def __init__(self, switch_name: _Optional[str] = ..., switch_guid: _Optional[str] = ..., in_port: _Optional[int] = ..., out_port: _Optional[int] = ...) -> None: ...

class FabricEvent(_message.Message):
    __slots__ = ("seq", "time", "kind", "severity", "system", "node", "port", "port_name", "message", "resweep_seconds", "trap_128")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PORT_NAME_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESWEEP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TRAP_128_FIELD_NUMBER: _ClassVar[int]
    seq: int
    time: float
    kind: str
    severity: str
    system: str
    node: str
    port: int
    port_name: str
    message: str
    resweep_seconds: float
    trap_128: bool
    def __init__(self, seq: _Optional[int] = ..., time: _Optional[float] = ..., kind: _Optional[str] = ..., severity: _Optional[str] = ..., system: _Optional[str] = ..., node: _Optional[str] = ..., port: _Optional[int] = ..., port_name: _Optional[str] = ..., message: _Optional[str] = ..., resweep_seconds: _Optional[float] = ..., trap_128: _Optional[bool] = ...) -> None: ...

class FabricLeafCapacity(_message.Message):
    __slots__ = ("leaf", "down_ports", "up_ports", "down_gbps", "up_gbps", "non_blocking")
    LEAF_FIELD_NUMBER: _ClassVar[int]
    DOWN_PORTS_FIELD_NUMBER: _ClassVar[int]
    UP_PORTS_FIELD_NUMBER: _ClassVar[int]
    DOWN_GBPS_FIELD_NUMBER: _ClassVar[int]
    UP_GBPS_FIELD_NUMBER: _ClassVar[int]
    NON_BLOCKING_FIELD_NUMBER: _ClassVar[int]
    leaf: str
    down_ports: int
    up_ports: int
    down_gbps: float
    up_gbps: float
    non_blocking: bool
    def __init__(self, leaf: _Optional[str] = ..., down_ports: _Optional[int] = ..., up_ports: _Optional[int] = ..., down_gbps: _Optional[float] = ..., up_gbps: _Optional[float] = ..., non_blocking: _Optional[bool] = ...) -> None: ...

class FabricLinkLoad(_message.Message):
    __slots__ = ("switch_name", "port", "peer", "peer_port", "direction", "flows")
    SWITCH_NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PEER_FIELD_NUMBER: _ClassVar[int]
    PEER_PORT_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    FLOWS_FIELD_NUMBER: _ClassVar[int]
    switch_name: str
    port: int
    peer: str
    peer_port: int
    direction: str
    flows: int
    def __init__(self, switch_name: _Optional[str] = ..., port: _Optional[int] = ..., peer: _Optional[str] = ..., peer_port: _Optional[int] = ..., direction: _Optional[str] = ..., flows: _Optional[int] = ...) -> None: ...

class FabricBalance(_message.Message):
    __slots__ = ("pattern", "flows", "routed", "unroutable", "busiest", "up_min", "up_max", "balanced", "loads")
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    FLOWS_FIELD_NUMBER: _ClassVar[int]
    ROUTED_FIELD_NUMBER: _ClassVar[int]
    UNROUTABLE_FIELD_NUMBER: _ClassVar[int]
    BUSIEST_FIELD_NUMBER: _ClassVar[int]
    UP_MIN_FIELD_NUMBER: _ClassVar[int]
    UP_MAX_FIELD_NUMBER: _ClassVar[int]
    BALANCED_FIELD_NUMBER: _ClassVar[int]
    LOADS_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    flows: int
    routed: int
    unroutable: _containers.RepeatedScalarFieldContainer[str]
    busiest: int
    up_min: int
    up_max: int
    balanced: bool
    loads: _containers.RepeatedCompositeFieldContainer[FabricLinkLoad]
    def __init__(self, pattern: _Optional[str] = ..., flows: _Optional[int] = ..., routed: _Optional[int] = ..., unroutable: _Optional[_Iterable[str]] = ..., busiest: _Optional[int] = ..., up_min: _Optional[int] = ..., up_max: _Optional[int] = ..., balanced: _Optional[bool] = ..., loads: _Optional[_Iterable[_Union[FabricLinkLoad, _Mapping]]] = ...) -> None: ...

class FabricListSystemsRequest(_message.Message):
    __slots__ = ("type", "page_size", "page_token")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    type: str
    page_size: int
    page_token: str
    def __init__(self, type: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class FabricListSystemsResponse(_message.Message):
    __slots__ = ("systems", "next_page_token")
    SYSTEMS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    systems: _containers.RepeatedCompositeFieldContainer[FabricSystem]
    next_page_token: str
    def __init__(self, systems: _Optional[_Iterable[_Union[FabricSystem, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class FabricListPortsRequest(_message.Message):
    __slots__ = ("system", "computer_only", "page_size", "page_token")
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    COMPUTER_ONLY_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    system: str
    computer_only: bool
    page_size: int
    page_token: str
    def __init__(self, system: _Optional[str] = ..., computer_only: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class FabricListPortsResponse(_message.Message):
    __slots__ = ("ports", "next_page_token")
    PORTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedCompositeFieldContainer[FabricPort]
    next_page_token: str
    def __init__(self, ports: _Optional[_Iterable[_Union[FabricPort, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class FabricListLinksRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class FabricListLinksResponse(_message.Message):
    __slots__ = ("links", "next_page_token")
    LINKS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    links: _containers.RepeatedCompositeFieldContainer[FabricLink]
    next_page_token: str
    def __init__(self, links: _Optional[_Iterable[_Union[FabricLink, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class FabricGetRouteRequest(_message.Message):
    __slots__ = ("src", "dst")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    src: FabricEndpoint
    dst: FabricEndpoint
    def __init__(self, src: _Optional[_Union[FabricEndpoint, _Mapping]] = ..., dst: _Optional[_Union[FabricEndpoint, _Mapping]] = ...) -> None: ...

class FabricGetRouteResponse(_message.Message):
    __slots__ = ("src_lid", "dst_lid", "hops")
    SRC_LID_FIELD_NUMBER: _ClassVar[int]
    DST_LID_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    src_lid: int
    dst_lid: int
    hops: _containers.RepeatedCompositeFieldContainer[FabricRouteHop]
    def __init__(self, src_lid: _Optional[int] = ..., dst_lid: _Optional[int] = ..., hops: _Optional[_Iterable[_Union[FabricRouteHop, _Mapping]]] = ...) -> None: ...

class FabricSetPortStateRequest(_message.Message):
    __slots__ = ("system", "port", "enabled", "more_ports")
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    MORE_PORTS_FIELD_NUMBER: _ClassVar[int]
    system: str
    port: int
    enabled: bool
    more_ports: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, system: _Optional[str] = ..., port: _Optional[int] = ..., enabled: _Optional[bool] = ..., more_ports: _Optional[_Iterable[int]] = ...) -> None: ...

class FabricSetPortStateResponse(_message.Message):
    __slots__ = ("port", "changed", "resweep_seconds", "trap_128")
    PORT_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    RESWEEP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TRAP_128_FIELD_NUMBER: _ClassVar[int]
    port: FabricPort
    changed: bool
    resweep_seconds: float
    trap_128: bool
    def __init__(self, port: _Optional[_Union[FabricPort, _Mapping]] = ..., changed: _Optional[bool] = ..., resweep_seconds: _Optional[float] = ..., trap_128: _Optional[bool] = ...) -> None: ...

class FabricGetHealthRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FabricGetHealthResponse(_message.Message):
    __slots__ = ("ports_total", "ports_active", "down_ports", "sm_state", "sm_node", "routing_engine", "sweeps", "last_sweep_time", "last_sweep_seconds")
    PORTS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    PORTS_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    DOWN_PORTS_FIELD_NUMBER: _ClassVar[int]
    SM_STATE_FIELD_NUMBER: _ClassVar[int]
    SM_NODE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_ENGINE_FIELD_NUMBER: _ClassVar[int]
    SWEEPS_FIELD_NUMBER: _ClassVar[int]
    LAST_SWEEP_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_SWEEP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ports_total: int
    ports_active: int
    down_ports: _containers.RepeatedCompositeFieldContainer[FabricPort]
    sm_state: str
    sm_node: str
    routing_engine: str
    sweeps: int
    last_sweep_time: float
    last_sweep_seconds: float
    def __init__(self, ports_total: _Optional[int] = ..., ports_active: _Optional[int] = ..., down_ports: _Optional[_Iterable[_Union[FabricPort, _Mapping]]] = ..., sm_state: _Optional[str] = ..., sm_node: _Optional[str] = ..., routing_engine: _Optional[str] = ..., sweeps: _Optional[int] = ..., last_sweep_time: _Optional[float] = ..., last_sweep_seconds: _Optional[float] = ...) -> None: ...

class FabricAnalyzeRequest(_message.Message):
    __slots__ = ("pattern",)
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    def __init__(self, pattern: _Optional[str] = ...) -> None: ...

class FabricDegradedServer(_message.Message):
    __slots__ = ("server", "rails_up", "rails", "down")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    RAILS_UP_FIELD_NUMBER: _ClassVar[int]
    RAILS_FIELD_NUMBER: _ClassVar[int]
    DOWN_FIELD_NUMBER: _ClassVar[int]
    server: str
    rails_up: int
    rails: int
    down: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, server: _Optional[str] = ..., rails_up: _Optional[int] = ..., rails: _Optional[int] = ..., down: _Optional[_Iterable[str]] = ...) -> None: ...

class FabricAnalyzeResponse(_message.Message):
    __slots__ = ("leaves", "non_blocking", "balance", "degraded_servers", "down_links", "degraded_paths")
    LEAVES_FIELD_NUMBER: _ClassVar[int]
    NON_BLOCKING_FIELD_NUMBER: _ClassVar[int]
    BALANCE_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_SERVERS_FIELD_NUMBER: _ClassVar[int]
    DOWN_LINKS_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_PATHS_FIELD_NUMBER: _ClassVar[int]
    leaves: _containers.RepeatedCompositeFieldContainer[FabricLeafCapacity]
    non_blocking: bool
    balance: FabricBalance
    degraded_servers: _containers.RepeatedCompositeFieldContainer[FabricDegradedServer]
    down_links: _containers.RepeatedCompositeFieldContainer[FabricLink]
    degraded_paths: int
    def __init__(self, leaves: _Optional[_Iterable[_Union[FabricLeafCapacity, _Mapping]]] = ..., non_blocking: _Optional[bool] = ..., balance: _Optional[_Union[FabricBalance, _Mapping]] = ..., degraded_servers: _Optional[_Iterable[_Union[FabricDegradedServer, _Mapping]]] = ..., down_links: _Optional[_Iterable[_Union[FabricLink, _Mapping]]] = ..., degraded_paths: _Optional[int] = ...) -> None: ...

class FabricResetPortRequest(_message.Message):
    __slots__ = ("system", "port")
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    system: str
    port: int
    def __init__(self, system: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class FabricResetPortResponse(_message.Message):
    __slots__ = ("port", "changed", "resweep_seconds", "trap_128")
    PORT_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    RESWEEP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TRAP_128_FIELD_NUMBER: _ClassVar[int]
    port: FabricPort
    changed: bool
    resweep_seconds: float
    trap_128: bool
    def __init__(self, port: _Optional[_Union[FabricPort, _Mapping]] = ..., changed: _Optional[bool] = ..., resweep_seconds: _Optional[float] = ..., trap_128: _Optional[bool] = ...) -> None: ...

class FabricUnhealthyPort(_message.Message):
    __slots__ = ("name", "node", "port", "peer_node", "peer_port", "action", "condition", "time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PEER_NODE_FIELD_NUMBER: _ClassVar[int]
    PEER_PORT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    CONDITION_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    node: str
    port: int
    peer_node: str
    peer_port: int
    action: str
    condition: str
    time: float
    def __init__(self, name: _Optional[str] = ..., node: _Optional[str] = ..., port: _Optional[int] = ..., peer_node: _Optional[str] = ..., peer_port: _Optional[int] = ..., action: _Optional[str] = ..., condition: _Optional[str] = ..., time: _Optional[float] = ...) -> None: ...

class FabricSetPortHealthRequest(_message.Message):
    __slots__ = ("ports", "healthy", "action")
    PORTS_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedScalarFieldContainer[str]
    healthy: bool
    action: str
    def __init__(self, ports: _Optional[_Iterable[str]] = ..., healthy: _Optional[bool] = ..., action: _Optional[str] = ...) -> None: ...

class FabricSetPortHealthResponse(_message.Message):
    __slots__ = ("ports",)
    PORTS_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedCompositeFieldContainer[FabricUnhealthyPort]
    def __init__(self, ports: _Optional[_Iterable[_Union[FabricUnhealthyPort, _Mapping]]] = ...) -> None: ...

class FabricListUnhealthyPortsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class FabricListUnhealthyPortsResponse(_message.Message):
    __slots__ = ("ports", "next_page_token")
    PORTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedCompositeFieldContainer[FabricUnhealthyPort]
    next_page_token: str
    def __init__(self, ports: _Optional[_Iterable[_Union[FabricUnhealthyPort, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class FabricAlarm(_message.Message):
    __slots__ = ("id", "type", "name", "description", "reason", "severity", "time", "object_name", "object_path", "event_count")
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    OBJECT_NAME_FIELD_NUMBER: _ClassVar[int]
    OBJECT_PATH_FIELD_NUMBER: _ClassVar[int]
    EVENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    id: int
    type: str
    name: str
    description: str
    reason: str
    severity: str
    time: float
    object_name: str
    object_path: str
    event_count: int
    def __init__(self, id: _Optional[int] = ..., type: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., reason: _Optional[str] = ..., severity: _Optional[str] = ..., time: _Optional[float] = ..., object_name: _Optional[str] = ..., object_path: _Optional[str] = ..., event_count: _Optional[int] = ...) -> None: ...

class FabricListAlarmsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class FabricListAlarmsResponse(_message.Message):
    __slots__ = ("alarms", "next_page_token")
    ALARMS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    alarms: _containers.RepeatedCompositeFieldContainer[FabricAlarm]
    next_page_token: str
    def __init__(self, alarms: _Optional[_Iterable[_Union[FabricAlarm, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class FabricPartitionMember(_message.Message):
    __slots__ = ("guid", "membership", "node", "port")
    GUID_FIELD_NUMBER: _ClassVar[int]
    MEMBERSHIP_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    guid: str
    membership: str
    node: str
    port: int
    def __init__(self, guid: _Optional[str] = ..., membership: _Optional[str] = ..., node: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class FabricPartition(_message.Message):
    __slots__ = ("name", "pkey", "ip_over_ib", "members", "all_ports")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PKEY_FIELD_NUMBER: _ClassVar[int]
    IP_OVER_IB_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    ALL_PORTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    pkey: int
    ip_over_ib: bool
    members: _containers.RepeatedCompositeFieldContainer[FabricPartitionMember]
    all_ports: bool
    def __init__(self, name: _Optional[str] = ..., pkey: _Optional[int] = ..., ip_over_ib: _Optional[bool] = ..., members: _Optional[_Iterable[_Union[FabricPartitionMember, _Mapping]]] = ..., all_ports: _Optional[bool] = ...) -> None: ...

class FabricListPartitionsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class FabricListPartitionsResponse(_message.Message):
    __slots__ = ("partitions", "next_page_token")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[FabricPartition]
    next_page_token: str
    def __init__(self, partitions: _Optional[_Iterable[_Union[FabricPartition, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class FabricSetPartitionRequest(_message.Message):
    __slots__ = ("partition",)
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    partition: FabricPartition
    def __init__(self, partition: _Optional[_Union[FabricPartition, _Mapping]] = ...) -> None: ...

class FabricSetPartitionResponse(_message.Message):
    __slots__ = ("partition",)
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    partition: FabricPartition
    def __init__(self, partition: _Optional[_Union[FabricPartition, _Mapping]] = ...) -> None: ...

class FabricDeletePartitionRequest(_message.Message):
    __slots__ = ("pkey",)
    PKEY_FIELD_NUMBER: _ClassVar[int]
    pkey: int
    def __init__(self, pkey: _Optional[int] = ...) -> None: ...

class FabricDeletePartitionResponse(_message.Message):
    __slots__ = ("partition",)
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    partition: FabricPartition
    def __init__(self, partition: _Optional[_Union[FabricPartition, _Mapping]] = ...) -> None: ...

class FabricPKeyEntry(_message.Message):
    __slots__ = ("pkey", "full")
    PKEY_FIELD_NUMBER: _ClassVar[int]
    FULL_FIELD_NUMBER: _ClassVar[int]
    pkey: int
    full: bool
    def __init__(self, pkey: _Optional[int] = ..., full: _Optional[bool] = ...) -> None: ...

class FabricGetPKeysRequest(_message.Message):
    __slots__ = ("system", "port")
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    system: str
    port: int
    def __init__(self, system: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class FabricGetPKeysResponse(_message.Message):
    __slots__ = ("pkeys",)
    PKEYS_FIELD_NUMBER: _ClassVar[int]
    pkeys: _containers.RepeatedCompositeFieldContainer[FabricPKeyEntry]
    def __init__(self, pkeys: _Optional[_Iterable[_Union[FabricPKeyEntry, _Mapping]]] = ...) -> None: ...

class FabricGetPortCountersRequest(_message.Message):
    __slots__ = ("system", "port")
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    system: str
    port: int
    def __init__(self, system: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class FabricGetPortCountersResponse(_message.Message):
    __slots__ = ("port_name", "counters")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    PORT_NAME_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    port_name: str
    counters: _containers.ScalarMap[str, int]
    def __init__(self, port_name: _Optional[str] = ..., counters: _Optional[_Mapping[str, int]] = ...) -> None: ...

class FabricSetPortCounterRequest(_message.Message):
    __slots__ = ("system", "port", "counter", "value")
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    COUNTER_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    system: str
    port: int
    counter: str
    value: int
    def __init__(self, system: _Optional[str] = ..., port: _Optional[int] = ..., counter: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...

class FabricSetPortCounterResponse(_message.Message):
    __slots__ = ("port_name", "counters")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    PORT_NAME_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    port_name: str
    counters: _containers.ScalarMap[str, int]
    def __init__(self, port_name: _Optional[str] = ..., counters: _Optional[_Mapping[str, int]] = ...) -> None: ...

class FabricSharpTree(_message.Message):
    __slots__ = ("tree_id", "rail", "root", "leaves", "hcas", "streaming", "state", "reason")
    TREE_ID_FIELD_NUMBER: _ClassVar[int]
    RAIL_FIELD_NUMBER: _ClassVar[int]
    ROOT_FIELD_NUMBER: _ClassVar[int]
    LEAVES_FIELD_NUMBER: _ClassVar[int]
    HCAS_FIELD_NUMBER: _ClassVar[int]
    STREAMING_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    tree_id: int
    rail: int
    root: str
    leaves: _containers.RepeatedScalarFieldContainer[str]
    hcas: _containers.RepeatedScalarFieldContainer[str]
    streaming: bool
    state: str
    reason: str
    def __init__(self, tree_id: _Optional[int] = ..., rail: _Optional[int] = ..., root: _Optional[str] = ..., leaves: _Optional[_Iterable[str]] = ..., hcas: _Optional[_Iterable[str]] = ..., streaming: _Optional[bool] = ..., state: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class FabricSharpJob(_message.Message):
    __slots__ = ("job_id", "hcas", "streaming", "trees", "sharp_available")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    HCAS_FIELD_NUMBER: _ClassVar[int]
    STREAMING_FIELD_NUMBER: _ClassVar[int]
    TREES_FIELD_NUMBER: _ClassVar[int]
    SHARP_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    hcas: _containers.RepeatedScalarFieldContainer[str]
    streaming: bool
    trees: _containers.RepeatedCompositeFieldContainer[FabricSharpTree]
    sharp_available: bool
    def __init__(self, job_id: _Optional[str] = ..., hcas: _Optional[_Iterable[str]] = ..., streaming: _Optional[bool] = ..., trees: _Optional[_Iterable[_Union[FabricSharpTree, _Mapping]]] = ..., sharp_available: _Optional[bool] = ...) -> None: ...

class FabricCreateSharpJobRequest(_message.Message):
    __slots__ = ("job_id", "hcas", "servers", "streaming")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    HCAS_FIELD_NUMBER: _ClassVar[int]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    STREAMING_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    hcas: _containers.RepeatedScalarFieldContainer[str]
    servers: _containers.RepeatedScalarFieldContainer[str]
    streaming: bool
    def __init__(self, job_id: _Optional[str] = ..., hcas: _Optional[_Iterable[str]] = ..., servers: _Optional[_Iterable[str]] = ..., streaming: _Optional[bool] = ...) -> None: ...

class FabricCreateSharpJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: FabricSharpJob
    def __init__(self, job: _Optional[_Union[FabricSharpJob, _Mapping]] = ...) -> None: ...

class FabricReleaseSharpJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class FabricReleaseSharpJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: FabricSharpJob
    def __init__(self, job: _Optional[_Union[FabricSharpJob, _Mapping]] = ...) -> None: ...

class FabricListSharpJobsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class FabricListSharpJobsResponse(_message.Message):
    __slots__ = ("jobs", "trees_in_use", "max_trees", "streaming_in_use", "max_streaming_trees", "next_page_token")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    TREES_IN_USE_FIELD_NUMBER: _ClassVar[int]
    MAX_TREES_FIELD_NUMBER: _ClassVar[int]
    STREAMING_IN_USE_FIELD_NUMBER: _ClassVar[int]
    MAX_STREAMING_TREES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[FabricSharpJob]
    trees_in_use: int
    max_trees: int
    streaming_in_use: int
    max_streaming_trees: int
    next_page_token: str
    def __init__(self, jobs: _Optional[_Iterable[_Union[FabricSharpJob, _Mapping]]] = ..., trees_in_use: _Optional[int] = ..., max_trees: _Optional[int] = ..., streaming_in_use: _Optional[int] = ..., max_streaming_trees: _Optional[int] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class FabricEstimateCollectiveRequest(_message.Message):
    __slots__ = ("op", "ranks", "bytes", "algorithm", "servers", "gpus_per_server", "sharp_job")
    OP_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_SERVER_FIELD_NUMBER: _ClassVar[int]
    SHARP_JOB_FIELD_NUMBER: _ClassVar[int]
    op: str
    ranks: int
    bytes: int
    algorithm: str
    servers: _containers.RepeatedScalarFieldContainer[str]
    gpus_per_server: int
    sharp_job: str
    def __init__(self, op: _Optional[str] = ..., ranks: _Optional[int] = ..., bytes: _Optional[int] = ..., algorithm: _Optional[str] = ..., servers: _Optional[_Iterable[str]] = ..., gpus_per_server: _Optional[int] = ..., sharp_job: _Optional[str] = ...) -> None: ...

class FabricEstimateCollectiveResponse(_message.Message):
    __slots__ = ("op", "ranks", "bytes", "algorithm", "time_s", "algbw_gbps", "busbw_gbps", "bottleneck", "terms", "params", "modelled", "slowest_server", "slowest_rails_up", "congestion")
    class TermsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    OP_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    TIME_S_FIELD_NUMBER: _ClassVar[int]
    ALGBW_GBPS_FIELD_NUMBER: _ClassVar[int]
    BUSBW_GBPS_FIELD_NUMBER: _ClassVar[int]
    BOTTLENECK_FIELD_NUMBER: _ClassVar[int]
    TERMS_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    MODELLED_FIELD_NUMBER: _ClassVar[int]
    SLOWEST_SERVER_FIELD_NUMBER: _ClassVar[int]
    SLOWEST_RAILS_UP_FIELD_NUMBER: _ClassVar[int]
    CONGESTION_FIELD_NUMBER: _ClassVar[int]
    op: str
    ranks: int
    bytes: int
    algorithm: str
    time_s: float
    algbw_gbps: float
    busbw_gbps: float
    bottleneck: str
    terms: _containers.ScalarMap[str, float]
    params: _containers.ScalarMap[str, str]
    modelled: bool
    slowest_server: str
    slowest_rails_up: int
    congestion: float
    def __init__(self, op: _Optional[str] = ..., ranks: _Optional[int] = ..., bytes: _Optional[int] = ..., algorithm: _Optional[str] = ..., time_s: _Optional[float] = ..., algbw_gbps: _Optional[float] = ..., busbw_gbps: _Optional[float] = ..., bottleneck: _Optional[str] = ..., terms: _Optional[_Mapping[str, float]] = ..., params: _Optional[_Mapping[str, str]] = ..., modelled: _Optional[bool] = ..., slowest_server: _Optional[str] = ..., slowest_rails_up: _Optional[int] = ..., congestion: _Optional[float] = ...) -> None: ...

class FabricWatchEventsRequest(_message.Message):
    __slots__ = ("since_seq",)
    SINCE_SEQ_FIELD_NUMBER: _ClassVar[int]
    since_seq: int
    def __init__(self, since_seq: _Optional[int] = ...) -> None: ...

class FabricWatchEventsResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: FabricEvent
    def __init__(self, event: _Optional[_Union[FabricEvent, _Mapping]] = ...) -> None: ...
