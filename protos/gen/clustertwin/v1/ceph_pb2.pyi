from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CephChunkKey(_message.Message):
    __slots__ = ("pg", "object", "shard")
    PG_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    pg: str
    object: str
    shard: int
    def __init__(self, pg: _Optional[str] = ..., object: _Optional[str] = ..., shard: _Optional[int] = ...) -> None: ...

class CephChunkInfo(_message.Message):
    __slots__ = ("key", "bytes")
    KEY_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    key: CephChunkKey
    bytes: int
    def __init__(self, key: _Optional[_Union[CephChunkKey, _Mapping]] = ..., bytes: _Optional[int] = ...) -> None: ...

class CephDeviceModel(_message.Message):
    __slots__ = ("device_class", "latency_s", "bandwidth_bytes_s")
    DEVICE_CLASS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_S_FIELD_NUMBER: _ClassVar[int]
    BANDWIDTH_BYTES_S_FIELD_NUMBER: _ClassVar[int]
    device_class: str
    latency_s: float
    bandwidth_bytes_s: float
    def __init__(self, device_class: _Optional[str] = ..., latency_s: _Optional[float] = ..., bandwidth_bytes_s: _Optional[float] = ...) -> None: ...

class CephOsdStat(_message.Message):
    __slots__ = ("osd", "host", "state", "used_bytes", "chunks", "capacity_bytes", "slow_factor", "model", "ops", "data_dir", "storage_timing", "device_wait_seconds")
    OSD_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    SLOW_FACTOR_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    DATA_DIR_FIELD_NUMBER: _ClassVar[int]
    STORAGE_TIMING_FIELD_NUMBER: _ClassVar[int]
    DEVICE_WAIT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    osd: int
    host: str
    state: str
    used_bytes: int
    chunks: int
    capacity_bytes: int
    slow_factor: float
    model: CephDeviceModel
    ops: int
    data_dir: str
    storage_timing: str
    device_wait_seconds: float
    def __init__(self, osd: _Optional[int] = ..., host: _Optional[str] = ..., state: _Optional[str] = ..., used_bytes: _Optional[int] = ..., chunks: _Optional[int] = ..., capacity_bytes: _Optional[int] = ..., slow_factor: _Optional[float] = ..., model: _Optional[_Union[CephDeviceModel, _Mapping]] = ..., ops: _Optional[int] = ..., data_dir: _Optional[str] = ..., storage_timing: _Optional[str] = ..., device_wait_seconds: _Optional[float] = ...) -> None: ...

class CephObjectStat(_message.Message):
    __slots__ = ("name", "pg", "size")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PG_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    name: str
    pg: str
    size: int
    def __init__(self, name: _Optional[str] = ..., pg: _Optional[str] = ..., size: _Optional[int] = ...) -> None: ...

class CephHealthCheck(_message.Message):
    __slots__ = ("code", "severity", "summary", "detail")
    CODE_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    code: str
    severity: str
    summary: str
    detail: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, code: _Optional[str] = ..., severity: _Optional[str] = ..., summary: _Optional[str] = ..., detail: _Optional[_Iterable[str]] = ...) -> None: ...

class CephOsdInfo(_message.Message):
    __slots__ = ("id", "name", "host", "device_class", "weight", "up", "address", "used_bytes", "capacity_bytes")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    DEVICE_CLASS_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    UP_FIELD_NUMBER: _ClassVar[int]
    IN_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    host: str
    device_class: str
    weight: float
    up: bool
    address: str
    used_bytes: int
    capacity_bytes: int
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., host: _Optional[str] = ..., device_class: _Optional[str] = ..., weight: _Optional[float] = ..., up: _Optional[bool] = ..., address: _Optional[str] = ..., used_bytes: _Optional[int] = ..., capacity_bytes: _Optional[int] = ..., **kwargs) -> None: ...

class CephCrushHost(_message.Message):
    __slots__ = ("bucket_id", "name", "osds")
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OSDS_FIELD_NUMBER: _ClassVar[int]
    bucket_id: int
    name: str
    osds: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, bucket_id: _Optional[int] = ..., name: _Optional[str] = ..., osds: _Optional[_Iterable[int]] = ...) -> None: ...

class CephPool(_message.Message):
    __slots__ = ("id", "name", "type", "size", "min_size", "pg_num", "device_class", "failure_domain", "codec", "objects", "stored_bytes", "raw_bytes")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    MIN_SIZE_FIELD_NUMBER: _ClassVar[int]
    PG_NUM_FIELD_NUMBER: _ClassVar[int]
    DEVICE_CLASS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_DOMAIN_FIELD_NUMBER: _ClassVar[int]
    CODEC_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    STORED_BYTES_FIELD_NUMBER: _ClassVar[int]
    RAW_BYTES_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    type: str
    size: int
    min_size: int
    pg_num: int
    device_class: str
    failure_domain: str
    codec: str
    objects: int
    stored_bytes: int
    raw_bytes: int
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., type: _Optional[str] = ..., size: _Optional[int] = ..., min_size: _Optional[int] = ..., pg_num: _Optional[int] = ..., device_class: _Optional[str] = ..., failure_domain: _Optional[str] = ..., codec: _Optional[str] = ..., objects: _Optional[int] = ..., stored_bytes: _Optional[int] = ..., raw_bytes: _Optional[int] = ...) -> None: ...

class CephPg(_message.Message):
    __slots__ = ("pgid", "state", "up", "acting", "objects", "bytes", "unfound")
    PGID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    UP_FIELD_NUMBER: _ClassVar[int]
    ACTING_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    UNFOUND_FIELD_NUMBER: _ClassVar[int]
    pgid: str
    state: str
    up: _containers.RepeatedScalarFieldContainer[int]
    acting: _containers.RepeatedScalarFieldContainer[int]
    objects: int
    bytes: int
    unfound: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, pgid: _Optional[str] = ..., state: _Optional[str] = ..., up: _Optional[_Iterable[int]] = ..., acting: _Optional[_Iterable[int]] = ..., objects: _Optional[int] = ..., bytes: _Optional[int] = ..., unfound: _Optional[_Iterable[str]] = ...) -> None: ...

class CephRgwUser(_message.Message):
    __slots__ = ("uid", "display_name", "email", "tenant", "access_key", "secret_key")
    UID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    ACCESS_KEY_FIELD_NUMBER: _ClassVar[int]
    SECRET_KEY_FIELD_NUMBER: _ClassVar[int]
    uid: str
    display_name: str
    email: str
    tenant: str
    access_key: str
    secret_key: str
    def __init__(self, uid: _Optional[str] = ..., display_name: _Optional[str] = ..., email: _Optional[str] = ..., tenant: _Optional[str] = ..., access_key: _Optional[str] = ..., secret_key: _Optional[str] = ...) -> None: ...

class CephScrubError(_message.Message):
    __slots__ = ("pg", "object", "shard", "osd", "problem")
    PG_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    OSD_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    pg: str
    object: str
    shard: int
    osd: int
    problem: str
    def __init__(self, pg: _Optional[str] = ..., object: _Optional[str] = ..., shard: _Optional[int] = ..., osd: _Optional[int] = ..., problem: _Optional[str] = ...) -> None: ...

class CephFault(_message.Message):
    __slots__ = ("id", "kind", "osd", "factor", "pool", "object", "injected_at", "active", "cleared_at", "effect")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    OSD_FIELD_NUMBER: _ClassVar[int]
    FACTOR_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    INJECTED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    CLEARED_AT_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: str
    osd: int
    factor: float
    pool: str
    object: str
    injected_at: float
    active: bool
    cleared_at: float
    effect: str
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., osd: _Optional[int] = ..., factor: _Optional[float] = ..., pool: _Optional[str] = ..., object: _Optional[str] = ..., injected_at: _Optional[float] = ..., active: _Optional[bool] = ..., cleared_at: _Optional[float] = ..., effect: _Optional[str] = ...) -> None: ...

class CephEvent(_message.Message):
    __slots__ = ("seq", "time", "kind", "message", "osd", "host", "epoch", "pg", "from_state", "to_state", "fault", "pool", "image")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OSD_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    PG_FIELD_NUMBER: _ClassVar[int]
    FROM_STATE_FIELD_NUMBER: _ClassVar[int]
    TO_STATE_FIELD_NUMBER: _ClassVar[int]
    FAULT_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    seq: int
    time: float
    kind: str
    message: str
    osd: int
    host: str
    epoch: int
    pg: str
    from_state: str
    to_state: str
    fault: CephFault
    pool: str
    image: str
    def __init__(self, seq: _Optional[int] = ..., time: _Optional[float] = ..., kind: _Optional[str] = ..., message: _Optional[str] = ..., osd: _Optional[int] = ..., host: _Optional[str] = ..., epoch: _Optional[int] = ..., pg: _Optional[str] = ..., from_state: _Optional[str] = ..., to_state: _Optional[str] = ..., fault: _Optional[_Union[CephFault, _Mapping]] = ..., pool: _Optional[str] = ..., image: _Optional[str] = ...) -> None: ...

class CephOsdPutChunkRequest(_message.Message):
    __slots__ = ("key", "data")
    KEY_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    key: CephChunkKey
    data: bytes
    def __init__(self, key: _Optional[_Union[CephChunkKey, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...

class CephOsdPutChunkResponse(_message.Message):
    __slots__ = ("bytes", "device_seconds")
    BYTES_FIELD_NUMBER: _ClassVar[int]
    DEVICE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    device_seconds: float
    def __init__(self, bytes: _Optional[int] = ..., device_seconds: _Optional[float] = ...) -> None: ...

class CephOsdGetChunkRequest(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: CephChunkKey
    def __init__(self, key: _Optional[_Union[CephChunkKey, _Mapping]] = ...) -> None: ...

class CephOsdGetChunkResponse(_message.Message):
    __slots__ = ("found", "data", "device_seconds")
    FOUND_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DEVICE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    found: bool
    data: bytes
    device_seconds: float
    def __init__(self, found: _Optional[bool] = ..., data: _Optional[bytes] = ..., device_seconds: _Optional[float] = ...) -> None: ...

class CephOsdDeleteChunkRequest(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: CephChunkKey
    def __init__(self, key: _Optional[_Union[CephChunkKey, _Mapping]] = ...) -> None: ...

class CephOsdDeleteChunkResponse(_message.Message):
    __slots__ = ("existed",)
    EXISTED_FIELD_NUMBER: _ClassVar[int]
    existed: bool
    def __init__(self, existed: _Optional[bool] = ...) -> None: ...

class CephOsdListChunksRequest(_message.Message):
    __slots__ = ("pg", "page_size", "page_token")
    PG_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    pg: str
    page_size: int
    page_token: str
    def __init__(self, pg: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class CephOsdListChunksResponse(_message.Message):
    __slots__ = ("chunks", "next_page_token")
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    chunks: _containers.RepeatedCompositeFieldContainer[CephChunkInfo]
    next_page_token: str
    def __init__(self, chunks: _Optional[_Iterable[_Union[CephChunkInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CephOsdStatRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CephOsdStatResponse(_message.Message):
    __slots__ = ("stat",)
    STAT_FIELD_NUMBER: _ClassVar[int]
    stat: CephOsdStat
    def __init__(self, stat: _Optional[_Union[CephOsdStat, _Mapping]] = ...) -> None: ...

class CephOsdCorruptRequest(_message.Message):
    __slots__ = ("key", "offset")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    key: CephChunkKey
    offset: int
    def __init__(self, key: _Optional[_Union[CephChunkKey, _Mapping]] = ..., offset: _Optional[int] = ...) -> None: ...

class CephOsdCorruptResponse(_message.Message):
    __slots__ = ("bytes",)
    BYTES_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    def __init__(self, bytes: _Optional[int] = ...) -> None: ...

class CephOsdSetFaultRequest(_message.Message):
    __slots__ = ("slow_factor", "stopped")
    SLOW_FACTOR_FIELD_NUMBER: _ClassVar[int]
    STOPPED_FIELD_NUMBER: _ClassVar[int]
    slow_factor: float
    stopped: bool
    def __init__(self, slow_factor: _Optional[float] = ..., stopped: _Optional[bool] = ...) -> None: ...

class CephOsdSetFaultResponse(_message.Message):
    __slots__ = ("stat",)
    STAT_FIELD_NUMBER: _ClassVar[int]
    stat: CephOsdStat
    def __init__(self, stat: _Optional[_Union[CephOsdStat, _Mapping]] = ...) -> None: ...

class CephOsdWatchEventsRequest(_message.Message):
    __slots__ = ("since_seq",)
    SINCE_SEQ_FIELD_NUMBER: _ClassVar[int]
    since_seq: int
    def __init__(self, since_seq: _Optional[int] = ...) -> None: ...

class CephOsdWatchEventsResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: CephEvent
    def __init__(self, event: _Optional[_Union[CephEvent, _Mapping]] = ...) -> None: ...

class CephChunkOp(_message.Message):
    __slots__ = ("id", "op", "key", "data", "data_length")
    ID_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DATA_LENGTH_FIELD_NUMBER: _ClassVar[int]
    id: int
    op: str
    key: CephChunkKey
    data: bytes
    data_length: int
    def __init__(self, id: _Optional[int] = ..., op: _Optional[str] = ..., key: _Optional[_Union[CephChunkKey, _Mapping]] = ..., data: _Optional[bytes] = ..., data_length: _Optional[int] = ...) -> None: ...

class CephChunkOpResult(_message.Message):
    __slots__ = ("id", "code", "message", "found", "data", "device_seconds", "data_length", "file_offset", "file_length")
    ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FOUND_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DEVICE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    DATA_LENGTH_FIELD_NUMBER: _ClassVar[int]
    FILE_OFFSET_FIELD_NUMBER: _ClassVar[int]
    FILE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    id: int
    code: str
    message: str
    found: bool
    data: bytes
    device_seconds: float
    data_length: int
    file_offset: int
    file_length: int
    def __init__(self, id: _Optional[int] = ..., code: _Optional[str] = ..., message: _Optional[str] = ..., found: _Optional[bool] = ..., data: _Optional[bytes] = ..., device_seconds: _Optional[float] = ..., data_length: _Optional[int] = ..., file_offset: _Optional[int] = ..., file_length: _Optional[int] = ...) -> None: ...

class CephOsdChunkStreamRequest(_message.Message):
    __slots__ = ("ops",)
    OPS_FIELD_NUMBER: _ClassVar[int]
    ops: _containers.RepeatedCompositeFieldContainer[CephChunkOp]
    def __init__(self, ops: _Optional[_Iterable[_Union[CephChunkOp, _Mapping]]] = ...) -> None: ...

class CephOsdChunkStreamResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[CephChunkOpResult]
    def __init__(self, results: _Optional[_Iterable[_Union[CephChunkOpResult, _Mapping]]] = ...) -> None: ...

class CephMonHeartbeatRequest(_message.Message):
    __slots__ = ("osd", "boot_time", "used_bytes", "stopping")
    OSD_FIELD_NUMBER: _ClassVar[int]
    BOOT_TIME_FIELD_NUMBER: _ClassVar[int]
    USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    STOPPING_FIELD_NUMBER: _ClassVar[int]
    osd: int
    boot_time: float
    used_bytes: int
    stopping: bool
    def __init__(self, osd: _Optional[int] = ..., boot_time: _Optional[float] = ..., used_bytes: _Optional[int] = ..., stopping: _Optional[bool] = ...) -> None: ...

class CephMonHeartbeatResponse(_message.Message):
    __slots__ = ("up", "epoch")
    UP_FIELD_NUMBER: _ClassVar[int]
    IN_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    up: bool
    epoch: int
    def __init__(self, up: _Optional[bool] = ..., epoch: _Optional[int] = ..., **kwargs) -> None: ...

class CephMonPutObjectRequest(_message.Message):
    __slots__ = ("pool", "name", "data")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    data: bytes
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class CephObjectPlacement(_message.Message):
    __slots__ = ("acting", "crcs", "size")
    ACTING_FIELD_NUMBER: _ClassVar[int]
    CRCS_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    acting: _containers.RepeatedScalarFieldContainer[int]
    crcs: _containers.RepeatedScalarFieldContainer[int]
    size: int
    def __init__(self, acting: _Optional[_Iterable[int]] = ..., crcs: _Optional[_Iterable[int]] = ..., size: _Optional[int] = ...) -> None: ...

class CephMonPutObjectResponse(_message.Message):
    __slots__ = ("pg", "placement")
    PG_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    pg: str
    placement: CephObjectPlacement
    def __init__(self, pg: _Optional[str] = ..., placement: _Optional[_Union[CephObjectPlacement, _Mapping]] = ...) -> None: ...

class CephMonGetObjectRequest(_message.Message):
    __slots__ = ("pool", "name")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class CephMonGetObjectResponse(_message.Message):
    __slots__ = ("data", "pg", "placement")
    DATA_FIELD_NUMBER: _ClassVar[int]
    PG_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    pg: str
    placement: CephObjectPlacement
    def __init__(self, data: _Optional[bytes] = ..., pg: _Optional[str] = ..., placement: _Optional[_Union[CephObjectPlacement, _Mapping]] = ...) -> None: ...

class CephMonRemoveObjectRequest(_message.Message):
    __slots__ = ("pool", "name")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class CephMonRemoveObjectResponse(_message.Message):
    __slots__ = ("existed",)
    EXISTED_FIELD_NUMBER: _ClassVar[int]
    existed: bool
    def __init__(self, existed: _Optional[bool] = ...) -> None: ...

class CephMonRemoveObjectsRequest(_message.Message):
    __slots__ = ("pool", "names")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    pool: str
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, pool: _Optional[str] = ..., names: _Optional[_Iterable[str]] = ...) -> None: ...

class CephMonRemoveObjectsResponse(_message.Message):
    __slots__ = ("failed", "error")
    FAILED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    failed: _containers.RepeatedScalarFieldContainer[str]
    error: str
    def __init__(self, failed: _Optional[_Iterable[str]] = ..., error: _Optional[str] = ...) -> None: ...

class CephForgottenObject(_message.Message):
    __slots__ = ("name", "pg", "chunks")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PG_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    name: str
    pg: str
    chunks: _containers.RepeatedCompositeFieldContainer[CephShardTarget]
    def __init__(self, name: _Optional[str] = ..., pg: _Optional[str] = ..., chunks: _Optional[_Iterable[_Union[CephShardTarget, _Mapping]]] = ...) -> None: ...

class CephMonForgetObjectsRequest(_message.Message):
    __slots__ = ("pool", "names")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    pool: str
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, pool: _Optional[str] = ..., names: _Optional[_Iterable[str]] = ...) -> None: ...

class CephMonForgetObjectsResponse(_message.Message):
    __slots__ = ("failed", "error", "forgotten")
    FAILED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FORGOTTEN_FIELD_NUMBER: _ClassVar[int]
    failed: _containers.RepeatedScalarFieldContainer[str]
    error: str
    forgotten: _containers.RepeatedCompositeFieldContainer[CephForgottenObject]
    def __init__(self, failed: _Optional[_Iterable[str]] = ..., error: _Optional[str] = ..., forgotten: _Optional[_Iterable[_Union[CephForgottenObject, _Mapping]]] = ...) -> None: ...

class CephMonPutObjectsRequest(_message.Message):
    __slots__ = ("objects",)
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    objects: _containers.RepeatedCompositeFieldContainer[CephMonPutObjectRequest]
    def __init__(self, objects: _Optional[_Iterable[_Union[CephMonPutObjectRequest, _Mapping]]] = ...) -> None: ...

class CephMonPutObjectResult(_message.Message):
    __slots__ = ("pg", "code", "error")
    PG_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    pg: str
    code: str
    error: str
    def __init__(self, pg: _Optional[str] = ..., code: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class CephMonPutObjectsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[CephMonPutObjectResult]
    def __init__(self, results: _Optional[_Iterable[_Union[CephMonPutObjectResult, _Mapping]]] = ...) -> None: ...

class CephShardTarget(_message.Message):
    __slots__ = ("shard", "osd")
    SHARD_FIELD_NUMBER: _ClassVar[int]
    OSD_FIELD_NUMBER: _ClassVar[int]
    shard: int
    osd: int
    def __init__(self, shard: _Optional[int] = ..., osd: _Optional[int] = ...) -> None: ...

class CephMonWritePlanRequest(_message.Message):
    __slots__ = ("pool", "name")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class CephMonWritePlanResponse(_message.Message):
    __slots__ = ("pg", "plan", "pool_id", "pg_num", "erasure", "k", "m", "stripe_unit", "size")
    PG_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    POOL_ID_FIELD_NUMBER: _ClassVar[int]
    PG_NUM_FIELD_NUMBER: _ClassVar[int]
    ERASURE_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    M_FIELD_NUMBER: _ClassVar[int]
    STRIPE_UNIT_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    pg: str
    plan: _containers.RepeatedCompositeFieldContainer[CephShardTarget]
    pool_id: int
    pg_num: int
    erasure: bool
    k: int
    m: int
    stripe_unit: int
    size: int
    def __init__(self, pg: _Optional[str] = ..., plan: _Optional[_Iterable[_Union[CephShardTarget, _Mapping]]] = ..., pool_id: _Optional[int] = ..., pg_num: _Optional[int] = ..., erasure: _Optional[bool] = ..., k: _Optional[int] = ..., m: _Optional[int] = ..., stripe_unit: _Optional[int] = ..., size: _Optional[int] = ...) -> None: ...

class CephChunkFailure(_message.Message):
    __slots__ = ("shard", "osd", "why")
    SHARD_FIELD_NUMBER: _ClassVar[int]
    OSD_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    shard: int
    osd: int
    why: str
    def __init__(self, shard: _Optional[int] = ..., osd: _Optional[int] = ..., why: _Optional[str] = ...) -> None: ...

class CephMonCommitObjectRequest(_message.Message):
    __slots__ = ("pool", "name", "pg", "size", "crcs", "plan", "failures")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PG_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    CRCS_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    pg: str
    size: int
    crcs: _containers.RepeatedScalarFieldContainer[int]
    plan: _containers.RepeatedCompositeFieldContainer[CephShardTarget]
    failures: _containers.RepeatedCompositeFieldContainer[CephChunkFailure]
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ..., pg: _Optional[str] = ..., size: _Optional[int] = ..., crcs: _Optional[_Iterable[int]] = ..., plan: _Optional[_Iterable[_Union[CephShardTarget, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[CephChunkFailure, _Mapping]]] = ...) -> None: ...

class CephMonCommitObjectResult(_message.Message):
    __slots__ = ("stale", "pg", "plan", "code", "error")
    STALE_FIELD_NUMBER: _ClassVar[int]
    PG_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    stale: bool
    pg: str
    plan: _containers.RepeatedCompositeFieldContainer[CephShardTarget]
    code: str
    error: str
    def __init__(self, stale: _Optional[bool] = ..., pg: _Optional[str] = ..., plan: _Optional[_Iterable[_Union[CephShardTarget, _Mapping]]] = ..., code: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class CephMonCommitObjectsRequest(_message.Message):
    __slots__ = ("objects",)
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    objects: _containers.RepeatedCompositeFieldContainer[CephMonCommitObjectRequest]
    def __init__(self, objects: _Optional[_Iterable[_Union[CephMonCommitObjectRequest, _Mapping]]] = ...) -> None: ...

class CephMonCommitObjectsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[CephMonCommitObjectResult]
    def __init__(self, results: _Optional[_Iterable[_Union[CephMonCommitObjectResult, _Mapping]]] = ...) -> None: ...

class CephMonListObjectsRequest(_message.Message):
    __slots__ = ("pool", "prefix", "page_size", "page_token")
    POOL_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    pool: str
    prefix: str
    page_size: int
    page_token: str
    def __init__(self, pool: _Optional[str] = ..., prefix: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class CephMonListObjectsResponse(_message.Message):
    __slots__ = ("objects", "next_page_token")
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    objects: _containers.RepeatedCompositeFieldContainer[CephObjectStat]
    next_page_token: str
    def __init__(self, objects: _Optional[_Iterable[_Union[CephObjectStat, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CephMonStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CephMonStatusResponse(_message.Message):
    __slots__ = ("fsid", "health", "checks", "mons", "time", "mon_started_at", "last_up_change", "last_in_change", "osds", "osds_up", "osds_in", "pools", "pgs", "pg_states", "pgs_inactive", "copies", "degraded", "misplaced", "unfound", "objects", "stored_bytes", "used_bytes", "total_bytes", "raw_bytes", "epoch")
    class PgStatesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    FSID_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    MONS_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    MON_STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_UP_CHANGE_FIELD_NUMBER: _ClassVar[int]
    LAST_IN_CHANGE_FIELD_NUMBER: _ClassVar[int]
    OSDS_FIELD_NUMBER: _ClassVar[int]
    OSDS_UP_FIELD_NUMBER: _ClassVar[int]
    OSDS_IN_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    PGS_FIELD_NUMBER: _ClassVar[int]
    PG_STATES_FIELD_NUMBER: _ClassVar[int]
    PGS_INACTIVE_FIELD_NUMBER: _ClassVar[int]
    COPIES_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    MISPLACED_FIELD_NUMBER: _ClassVar[int]
    UNFOUND_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    STORED_BYTES_FIELD_NUMBER: _ClassVar[int]
    USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    RAW_BYTES_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    fsid: str
    health: str
    checks: _containers.RepeatedCompositeFieldContainer[CephHealthCheck]
    mons: _containers.RepeatedScalarFieldContainer[str]
    time: float
    mon_started_at: float
    last_up_change: float
    last_in_change: float
    osds: int
    osds_up: int
    osds_in: int
    pools: int
    pgs: int
    pg_states: _containers.ScalarMap[str, int]
    pgs_inactive: int
    copies: int
    degraded: int
    misplaced: int
    unfound: int
    objects: int
    stored_bytes: int
    used_bytes: int
    total_bytes: int
    raw_bytes: int
    epoch: int
    def __init__(self, fsid: _Optional[str] = ..., health: _Optional[str] = ..., checks: _Optional[_Iterable[_Union[CephHealthCheck, _Mapping]]] = ..., mons: _Optional[_Iterable[str]] = ..., time: _Optional[float] = ..., mon_started_at: _Optional[float] = ..., last_up_change: _Optional[float] = ..., last_in_change: _Optional[float] = ..., osds: _Optional[int] = ..., osds_up: _Optional[int] = ..., osds_in: _Optional[int] = ..., pools: _Optional[int] = ..., pgs: _Optional[int] = ..., pg_states: _Optional[_Mapping[str, int]] = ..., pgs_inactive: _Optional[int] = ..., copies: _Optional[int] = ..., degraded: _Optional[int] = ..., misplaced: _Optional[int] = ..., unfound: _Optional[int] = ..., objects: _Optional[int] = ..., stored_bytes: _Optional[int] = ..., used_bytes: _Optional[int] = ..., total_bytes: _Optional[int] = ..., raw_bytes: _Optional[int] = ..., epoch: _Optional[int] = ...) -> None: ...

class CephMonHealthDetailRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CephMonHealthDetailResponse(_message.Message):
    __slots__ = ("health", "checks")
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    health: str
    checks: _containers.RepeatedCompositeFieldContainer[CephHealthCheck]
    def __init__(self, health: _Optional[str] = ..., checks: _Optional[_Iterable[_Union[CephHealthCheck, _Mapping]]] = ...) -> None: ...

class CephMonDfRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CephMonDfResponse(_message.Message):
    __slots__ = ("pools",)
    POOLS_FIELD_NUMBER: _ClassVar[int]
    pools: _containers.RepeatedCompositeFieldContainer[CephPool]
    def __init__(self, pools: _Optional[_Iterable[_Union[CephPool, _Mapping]]] = ...) -> None: ...

class CephMonOsdTreeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CephMonOsdTreeResponse(_message.Message):
    __slots__ = ("hosts", "osds")
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    OSDS_FIELD_NUMBER: _ClassVar[int]
    hosts: _containers.RepeatedCompositeFieldContainer[CephCrushHost]
    osds: _containers.RepeatedCompositeFieldContainer[CephOsdInfo]
    def __init__(self, hosts: _Optional[_Iterable[_Union[CephCrushHost, _Mapping]]] = ..., osds: _Optional[_Iterable[_Union[CephOsdInfo, _Mapping]]] = ...) -> None: ...

class CephMonOsdCommandRequest(_message.Message):
    __slots__ = ("osd", "command")
    OSD_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    osd: int
    command: str
    def __init__(self, osd: _Optional[int] = ..., command: _Optional[str] = ...) -> None: ...

class CephMonOsdCommandResponse(_message.Message):
    __slots__ = ("message", "epoch")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    message: str
    epoch: int
    def __init__(self, message: _Optional[str] = ..., epoch: _Optional[int] = ...) -> None: ...

class CephMonPoolsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CephMonPoolsResponse(_message.Message):
    __slots__ = ("pools",)
    POOLS_FIELD_NUMBER: _ClassVar[int]
    pools: _containers.RepeatedCompositeFieldContainer[CephPool]
    def __init__(self, pools: _Optional[_Iterable[_Union[CephPool, _Mapping]]] = ...) -> None: ...

class CephMonPgsRequest(_message.Message):
    __slots__ = ("pool", "pg", "object")
    POOL_FIELD_NUMBER: _ClassVar[int]
    PG_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    pool: str
    pg: str
    object: str
    def __init__(self, pool: _Optional[str] = ..., pg: _Optional[str] = ..., object: _Optional[str] = ...) -> None: ...

class CephMonPgsResponse(_message.Message):
    __slots__ = ("pgs",)
    PGS_FIELD_NUMBER: _ClassVar[int]
    pgs: _containers.RepeatedCompositeFieldContainer[CephPg]
    def __init__(self, pgs: _Optional[_Iterable[_Union[CephPg, _Mapping]]] = ...) -> None: ...

class CephMonUserCreateRequest(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: CephRgwUser
    def __init__(self, user: _Optional[_Union[CephRgwUser, _Mapping]] = ...) -> None: ...

class CephMonUserCreateResponse(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: CephRgwUser
    def __init__(self, user: _Optional[_Union[CephRgwUser, _Mapping]] = ...) -> None: ...

class CephMonUserListRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CephMonUserListResponse(_message.Message):
    __slots__ = ("users",)
    USERS_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedCompositeFieldContainer[CephRgwUser]
    def __init__(self, users: _Optional[_Iterable[_Union[CephRgwUser, _Mapping]]] = ...) -> None: ...

class CephMonScrubRequest(_message.Message):
    __slots__ = ("pg", "repair")
    PG_FIELD_NUMBER: _ClassVar[int]
    REPAIR_FIELD_NUMBER: _ClassVar[int]
    pg: str
    repair: bool
    def __init__(self, pg: _Optional[str] = ..., repair: _Optional[bool] = ...) -> None: ...

class CephMonScrubResponse(_message.Message):
    __slots__ = ("errors", "repaired", "pgs")
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    REPAIRED_FIELD_NUMBER: _ClassVar[int]
    PGS_FIELD_NUMBER: _ClassVar[int]
    errors: _containers.RepeatedCompositeFieldContainer[CephScrubError]
    repaired: int
    pgs: int
    def __init__(self, errors: _Optional[_Iterable[_Union[CephScrubError, _Mapping]]] = ..., repaired: _Optional[int] = ..., pgs: _Optional[int] = ...) -> None: ...

class CephMonCorruptChunkRequest(_message.Message):
    __slots__ = ("pool", "object", "osd", "offset")
    POOL_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    OSD_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    pool: str
    object: str
    osd: int
    offset: int
    def __init__(self, pool: _Optional[str] = ..., object: _Optional[str] = ..., osd: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

class CephMonCorruptChunkResponse(_message.Message):
    __slots__ = ("pg", "shard", "osd")
    PG_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    OSD_FIELD_NUMBER: _ClassVar[int]
    pg: str
    shard: int
    osd: int
    def __init__(self, pg: _Optional[str] = ..., shard: _Optional[int] = ..., osd: _Optional[int] = ...) -> None: ...

class CephMonRecordFaultRequest(_message.Message):
    __slots__ = ("fault",)
    FAULT_FIELD_NUMBER: _ClassVar[int]
    fault: CephFault
    def __init__(self, fault: _Optional[_Union[CephFault, _Mapping]] = ...) -> None: ...

class CephMonRecordFaultResponse(_message.Message):
    __slots__ = ("fault",)
    FAULT_FIELD_NUMBER: _ClassVar[int]
    fault: CephFault
    def __init__(self, fault: _Optional[_Union[CephFault, _Mapping]] = ...) -> None: ...

class CephMonClearFaultRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class CephMonClearFaultResponse(_message.Message):
    __slots__ = ("fault",)
    FAULT_FIELD_NUMBER: _ClassVar[int]
    fault: CephFault
    def __init__(self, fault: _Optional[_Union[CephFault, _Mapping]] = ...) -> None: ...

class CephMonListFaultsRequest(_message.Message):
    __slots__ = ("include_cleared", "page_size", "page_token")
    INCLUDE_CLEARED_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    include_cleared: bool
    page_size: int
    page_token: str
    def __init__(self, include_cleared: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class CephMonListFaultsResponse(_message.Message):
    __slots__ = ("faults", "next_page_token")
    FAULTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    faults: _containers.RepeatedCompositeFieldContainer[CephFault]
    next_page_token: str
    def __init__(self, faults: _Optional[_Iterable[_Union[CephFault, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CephMonWatchEventsRequest(_message.Message):
    __slots__ = ("since_seq",)
    SINCE_SEQ_FIELD_NUMBER: _ClassVar[int]
    since_seq: int
    def __init__(self, since_seq: _Optional[int] = ...) -> None: ...

class CephMonWatchEventsResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: CephEvent
    def __init__(self, event: _Optional[_Union[CephEvent, _Mapping]] = ...) -> None: ...

class CephRbdParent(_message.Message):
    __slots__ = ("pool", "image", "snap", "overlap")
    POOL_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    SNAP_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    pool: str
    image: str
    snap: str
    overlap: int
    def __init__(self, pool: _Optional[str] = ..., image: _Optional[str] = ..., snap: _Optional[str] = ..., overlap: _Optional[int] = ...) -> None: ...

class CephRbdImage(_message.Message):
    __slots__ = ("name", "id", "pool", "size", "order", "objects", "snapshot_count", "features", "created", "modified", "parent")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_COUNT_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    MODIFIED_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    name: str
    id: str
    pool: str
    size: int
    order: int
    objects: int
    snapshot_count: int
    features: _containers.RepeatedScalarFieldContainer[str]
    created: float
    modified: float
    parent: CephRbdParent
    def __init__(self, name: _Optional[str] = ..., id: _Optional[str] = ..., pool: _Optional[str] = ..., size: _Optional[int] = ..., order: _Optional[int] = ..., objects: _Optional[int] = ..., snapshot_count: _Optional[int] = ..., features: _Optional[_Iterable[str]] = ..., created: _Optional[float] = ..., modified: _Optional[float] = ..., parent: _Optional[_Union[CephRbdParent, _Mapping]] = ...) -> None: ...

class CephRbdSnap(_message.Message):
    __slots__ = ("id", "name", "size", "protected", "timestamp", "children")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    PROTECTED_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    size: int
    protected: bool
    timestamp: float
    children: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., size: _Optional[int] = ..., protected: _Optional[bool] = ..., timestamp: _Optional[float] = ..., children: _Optional[_Iterable[str]] = ...) -> None: ...

class CephRbdCreateRequest(_message.Message):
    __slots__ = ("pool", "name", "size", "order")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    size: int
    order: int
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ..., size: _Optional[int] = ..., order: _Optional[int] = ...) -> None: ...

class CephRbdCreateResponse(_message.Message):
    __slots__ = ("image",)
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    image: CephRbdImage
    def __init__(self, image: _Optional[_Union[CephRbdImage, _Mapping]] = ...) -> None: ...

class CephRbdListRequest(_message.Message):
    __slots__ = ("pool", "page_size", "page_token")
    POOL_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    pool: str
    page_size: int
    page_token: str
    def __init__(self, pool: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class CephRbdListResponse(_message.Message):
    __slots__ = ("names", "next_page_token")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    next_page_token: str
    def __init__(self, names: _Optional[_Iterable[str]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CephRbdInfoRequest(_message.Message):
    __slots__ = ("pool", "name")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class CephRbdInfoResponse(_message.Message):
    __slots__ = ("image",)
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    image: CephRbdImage
    def __init__(self, image: _Optional[_Union[CephRbdImage, _Mapping]] = ...) -> None: ...

class CephRbdResizeRequest(_message.Message):
    __slots__ = ("pool", "name", "size", "allow_shrink")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ALLOW_SHRINK_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    size: int
    allow_shrink: bool
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ..., size: _Optional[int] = ..., allow_shrink: _Optional[bool] = ...) -> None: ...

class CephRbdResizeResponse(_message.Message):
    __slots__ = ("image",)
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    image: CephRbdImage
    def __init__(self, image: _Optional[_Union[CephRbdImage, _Mapping]] = ...) -> None: ...

class CephRbdRemoveRequest(_message.Message):
    __slots__ = ("pool", "name")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class CephRbdRemoveResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CephRbdSnapCreateRequest(_message.Message):
    __slots__ = ("pool", "image", "snap")
    POOL_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    SNAP_FIELD_NUMBER: _ClassVar[int]
    pool: str
    image: str
    snap: str
    def __init__(self, pool: _Optional[str] = ..., image: _Optional[str] = ..., snap: _Optional[str] = ...) -> None: ...

class CephRbdSnapCreateResponse(_message.Message):
    __slots__ = ("snap",)
    SNAP_FIELD_NUMBER: _ClassVar[int]
    snap: CephRbdSnap
    def __init__(self, snap: _Optional[_Union[CephRbdSnap, _Mapping]] = ...) -> None: ...

class CephRbdSnapListRequest(_message.Message):
    __slots__ = ("pool", "name")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class CephRbdSnapListResponse(_message.Message):
    __slots__ = ("snaps",)
    SNAPS_FIELD_NUMBER: _ClassVar[int]
    snaps: _containers.RepeatedCompositeFieldContainer[CephRbdSnap]
    def __init__(self, snaps: _Optional[_Iterable[_Union[CephRbdSnap, _Mapping]]] = ...) -> None: ...

class CephRbdSnapRollbackRequest(_message.Message):
    __slots__ = ("pool", "image", "snap")
    POOL_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    SNAP_FIELD_NUMBER: _ClassVar[int]
    pool: str
    image: str
    snap: str
    def __init__(self, pool: _Optional[str] = ..., image: _Optional[str] = ..., snap: _Optional[str] = ...) -> None: ...

class CephRbdSnapRollbackResponse(_message.Message):
    __slots__ = ("image",)
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    image: CephRbdImage
    def __init__(self, image: _Optional[_Union[CephRbdImage, _Mapping]] = ...) -> None: ...

class CephRbdSnapRemoveRequest(_message.Message):
    __slots__ = ("pool", "image", "snap")
    POOL_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    SNAP_FIELD_NUMBER: _ClassVar[int]
    pool: str
    image: str
    snap: str
    def __init__(self, pool: _Optional[str] = ..., image: _Optional[str] = ..., snap: _Optional[str] = ...) -> None: ...

class CephRbdSnapRemoveResponse(_message.Message):
    __slots__ = ("snaps",)
    SNAPS_FIELD_NUMBER: _ClassVar[int]
    snaps: _containers.RepeatedCompositeFieldContainer[CephRbdSnap]
    def __init__(self, snaps: _Optional[_Iterable[_Union[CephRbdSnap, _Mapping]]] = ...) -> None: ...

class CephRbdSnapProtectRequest(_message.Message):
    __slots__ = ("pool", "image", "snap")
    POOL_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    SNAP_FIELD_NUMBER: _ClassVar[int]
    pool: str
    image: str
    snap: str
    def __init__(self, pool: _Optional[str] = ..., image: _Optional[str] = ..., snap: _Optional[str] = ...) -> None: ...

class CephRbdSnapProtectResponse(_message.Message):
    __slots__ = ("snap",)
    SNAP_FIELD_NUMBER: _ClassVar[int]
    snap: CephRbdSnap
    def __init__(self, snap: _Optional[_Union[CephRbdSnap, _Mapping]] = ...) -> None: ...

class CephRbdSnapUnprotectRequest(_message.Message):
    __slots__ = ("pool", "image", "snap")
    POOL_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    SNAP_FIELD_NUMBER: _ClassVar[int]
    pool: str
    image: str
    snap: str
    def __init__(self, pool: _Optional[str] = ..., image: _Optional[str] = ..., snap: _Optional[str] = ...) -> None: ...

class CephRbdSnapUnprotectResponse(_message.Message):
    __slots__ = ("snap",)
    SNAP_FIELD_NUMBER: _ClassVar[int]
    snap: CephRbdSnap
    def __init__(self, snap: _Optional[_Union[CephRbdSnap, _Mapping]] = ...) -> None: ...

class CephRbdCloneRequest(_message.Message):
    __slots__ = ("parent_pool", "parent", "snap", "pool", "name")
    PARENT_POOL_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    SNAP_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    parent_pool: str
    parent: str
    snap: str
    pool: str
    name: str
    def __init__(self, parent_pool: _Optional[str] = ..., parent: _Optional[str] = ..., snap: _Optional[str] = ..., pool: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class CephRbdCloneResponse(_message.Message):
    __slots__ = ("image",)
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    image: CephRbdImage
    def __init__(self, image: _Optional[_Union[CephRbdImage, _Mapping]] = ...) -> None: ...

class CephRbdWriteRequest(_message.Message):
    __slots__ = ("pool", "name", "offset", "data")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    offset: int
    data: bytes
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class CephRbdWriteResponse(_message.Message):
    __slots__ = ("bytes",)
    BYTES_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    def __init__(self, bytes: _Optional[int] = ...) -> None: ...

class CephRbdReadRequest(_message.Message):
    __slots__ = ("pool", "name", "offset", "length", "snap")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    SNAP_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    offset: int
    length: int
    snap: str
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ..., offset: _Optional[int] = ..., length: _Optional[int] = ..., snap: _Optional[str] = ...) -> None: ...

class CephRbdReadResponse(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class CephRbdWatchEventsRequest(_message.Message):
    __slots__ = ("pool", "image", "since_seq")
    POOL_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    SINCE_SEQ_FIELD_NUMBER: _ClassVar[int]
    pool: str
    image: str
    since_seq: int
    def __init__(self, pool: _Optional[str] = ..., image: _Optional[str] = ..., since_seq: _Optional[int] = ...) -> None: ...

class CephRbdWatchEventsResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: CephEvent
    def __init__(self, event: _Optional[_Union[CephEvent, _Mapping]] = ...) -> None: ...
