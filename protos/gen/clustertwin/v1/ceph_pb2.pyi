from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChunkKey(_message.Message):
    __slots__ = ("pg", "object", "shard")
    PG_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    pg: str
    object: str
    shard: int
    def __init__(self, pg: _Optional[str] = ..., object: _Optional[str] = ..., shard: _Optional[int] = ...) -> None: ...

class PutChunkRequest(_message.Message):
    __slots__ = ("key", "data")
    KEY_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    key: ChunkKey
    data: bytes
    def __init__(self, key: _Optional[_Union[ChunkKey, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...

class PutChunkReply(_message.Message):
    __slots__ = ("bytes", "device_seconds")
    BYTES_FIELD_NUMBER: _ClassVar[int]
    DEVICE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    device_seconds: float
    def __init__(self, bytes: _Optional[int] = ..., device_seconds: _Optional[float] = ...) -> None: ...

class GetChunkRequest(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: ChunkKey
    def __init__(self, key: _Optional[_Union[ChunkKey, _Mapping]] = ...) -> None: ...

class GetChunkReply(_message.Message):
    __slots__ = ("found", "data", "device_seconds")
    FOUND_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DEVICE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    found: bool
    data: bytes
    device_seconds: float
    def __init__(self, found: _Optional[bool] = ..., data: _Optional[bytes] = ..., device_seconds: _Optional[float] = ...) -> None: ...

class DeleteChunkRequest(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: ChunkKey
    def __init__(self, key: _Optional[_Union[ChunkKey, _Mapping]] = ...) -> None: ...

class DeleteChunkReply(_message.Message):
    __slots__ = ("existed",)
    EXISTED_FIELD_NUMBER: _ClassVar[int]
    existed: bool
    def __init__(self, existed: _Optional[bool] = ...) -> None: ...

class ListChunksRequest(_message.Message):
    __slots__ = ("pg",)
    PG_FIELD_NUMBER: _ClassVar[int]
    pg: str
    def __init__(self, pg: _Optional[str] = ...) -> None: ...

class ChunkInfo(_message.Message):
    __slots__ = ("key", "bytes")
    KEY_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    key: ChunkKey
    bytes: int
    def __init__(self, key: _Optional[_Union[ChunkKey, _Mapping]] = ..., bytes: _Optional[int] = ...) -> None: ...

class ListChunksReply(_message.Message):
    __slots__ = ("chunks",)
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    chunks: _containers.RepeatedCompositeFieldContainer[ChunkInfo]
    def __init__(self, chunks: _Optional[_Iterable[_Union[ChunkInfo, _Mapping]]] = ...) -> None: ...

class DeviceModel(_message.Message):
    __slots__ = ("device_class", "latency_s", "bandwidth_bytes_s")
    DEVICE_CLASS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_S_FIELD_NUMBER: _ClassVar[int]
    BANDWIDTH_BYTES_S_FIELD_NUMBER: _ClassVar[int]
    device_class: str
    latency_s: float
    bandwidth_bytes_s: float
    def __init__(self, device_class: _Optional[str] = ..., latency_s: _Optional[float] = ..., bandwidth_bytes_s: _Optional[float] = ...) -> None: ...

class OsdStatRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class OsdStat(_message.Message):
    __slots__ = ("osd", "host", "state", "used_bytes", "chunks", "capacity_bytes", "slow_factor", "model", "ops", "data_dir")
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
    osd: int
    host: str
    state: str
    used_bytes: int
    chunks: int
    capacity_bytes: int
    slow_factor: float
    model: DeviceModel
    ops: int
    data_dir: str
    def __init__(self, osd: _Optional[int] = ..., host: _Optional[str] = ..., state: _Optional[str] = ..., used_bytes: _Optional[int] = ..., chunks: _Optional[int] = ..., capacity_bytes: _Optional[int] = ..., slow_factor: _Optional[float] = ..., model: _Optional[_Union[DeviceModel, _Mapping]] = ..., ops: _Optional[int] = ..., data_dir: _Optional[str] = ...) -> None: ...

class CorruptRequest(_message.Message):
    __slots__ = ("key", "offset")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    key: ChunkKey
    offset: int
    def __init__(self, key: _Optional[_Union[ChunkKey, _Mapping]] = ..., offset: _Optional[int] = ...) -> None: ...

class CorruptReply(_message.Message):
    __slots__ = ("bytes",)
    BYTES_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    def __init__(self, bytes: _Optional[int] = ...) -> None: ...

class SetFaultRequest(_message.Message):
    __slots__ = ("slow_factor", "stopped")
    SLOW_FACTOR_FIELD_NUMBER: _ClassVar[int]
    STOPPED_FIELD_NUMBER: _ClassVar[int]
    slow_factor: float
    stopped: bool
    def __init__(self, slow_factor: _Optional[float] = ..., stopped: _Optional[bool] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
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

class HeartbeatReply(_message.Message):
    __slots__ = ("up", "epoch")
    UP_FIELD_NUMBER: _ClassVar[int]
    IN_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    up: bool
    epoch: int
    def __init__(self, up: _Optional[bool] = ..., epoch: _Optional[int] = ..., **kwargs) -> None: ...

class ObjectRef(_message.Message):
    __slots__ = ("pool", "name")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class PutObjectRequest(_message.Message):
    __slots__ = ("pool", "name", "data")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    data: bytes
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class PutObjectReply(_message.Message):
    __slots__ = ("pg",)
    PG_FIELD_NUMBER: _ClassVar[int]
    pg: str
    def __init__(self, pg: _Optional[str] = ...) -> None: ...

class GetObjectReply(_message.Message):
    __slots__ = ("data", "pg")
    DATA_FIELD_NUMBER: _ClassVar[int]
    PG_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    pg: str
    def __init__(self, data: _Optional[bytes] = ..., pg: _Optional[str] = ...) -> None: ...

class RemoveObjectReply(_message.Message):
    __slots__ = ("existed",)
    EXISTED_FIELD_NUMBER: _ClassVar[int]
    existed: bool
    def __init__(self, existed: _Optional[bool] = ...) -> None: ...

class ListObjectsRequest(_message.Message):
    __slots__ = ("pool", "prefix")
    POOL_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    pool: str
    prefix: str
    def __init__(self, pool: _Optional[str] = ..., prefix: _Optional[str] = ...) -> None: ...

class ObjectStat(_message.Message):
    __slots__ = ("name", "pg", "size")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PG_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    name: str
    pg: str
    size: int
    def __init__(self, name: _Optional[str] = ..., pg: _Optional[str] = ..., size: _Optional[int] = ...) -> None: ...

class ListObjectsReply(_message.Message):
    __slots__ = ("objects",)
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    objects: _containers.RepeatedCompositeFieldContainer[ObjectStat]
    def __init__(self, objects: _Optional[_Iterable[_Union[ObjectStat, _Mapping]]] = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatusReply(_message.Message):
    __slots__ = ("text", "health", "osds", "osds_up", "osds_in", "pg_states", "epoch", "stored_bytes", "raw_bytes", "objects")
    class PgStatesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    TEXT_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    OSDS_FIELD_NUMBER: _ClassVar[int]
    OSDS_UP_FIELD_NUMBER: _ClassVar[int]
    OSDS_IN_FIELD_NUMBER: _ClassVar[int]
    PG_STATES_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    STORED_BYTES_FIELD_NUMBER: _ClassVar[int]
    RAW_BYTES_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    text: str
    health: str
    osds: int
    osds_up: int
    osds_in: int
    pg_states: _containers.ScalarMap[str, int]
    epoch: int
    stored_bytes: int
    raw_bytes: int
    objects: int
    def __init__(self, text: _Optional[str] = ..., health: _Optional[str] = ..., osds: _Optional[int] = ..., osds_up: _Optional[int] = ..., osds_in: _Optional[int] = ..., pg_states: _Optional[_Mapping[str, int]] = ..., epoch: _Optional[int] = ..., stored_bytes: _Optional[int] = ..., raw_bytes: _Optional[int] = ..., objects: _Optional[int] = ...) -> None: ...

class TextReply(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class OsdTreeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class OsdInfo(_message.Message):
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

class OsdTreeReply(_message.Message):
    __slots__ = ("text", "osds")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    OSDS_FIELD_NUMBER: _ClassVar[int]
    text: str
    osds: _containers.RepeatedCompositeFieldContainer[OsdInfo]
    def __init__(self, text: _Optional[str] = ..., osds: _Optional[_Iterable[_Union[OsdInfo, _Mapping]]] = ...) -> None: ...

class OsdCommandRequest(_message.Message):
    __slots__ = ("osd", "command")
    OSD_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    osd: int
    command: str
    def __init__(self, osd: _Optional[int] = ..., command: _Optional[str] = ...) -> None: ...

class OsdCommandReply(_message.Message):
    __slots__ = ("message", "epoch")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    message: str
    epoch: int
    def __init__(self, message: _Optional[str] = ..., epoch: _Optional[int] = ...) -> None: ...

class PoolsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PoolInfo(_message.Message):
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

class PoolsReply(_message.Message):
    __slots__ = ("pools",)
    POOLS_FIELD_NUMBER: _ClassVar[int]
    pools: _containers.RepeatedCompositeFieldContainer[PoolInfo]
    def __init__(self, pools: _Optional[_Iterable[_Union[PoolInfo, _Mapping]]] = ...) -> None: ...

class PgsRequest(_message.Message):
    __slots__ = ("pool", "pg", "object")
    POOL_FIELD_NUMBER: _ClassVar[int]
    PG_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    pool: str
    pg: str
    object: str
    def __init__(self, pool: _Optional[str] = ..., pg: _Optional[str] = ..., object: _Optional[str] = ...) -> None: ...

class PgInfo(_message.Message):
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

class PgsReply(_message.Message):
    __slots__ = ("pgs",)
    PGS_FIELD_NUMBER: _ClassVar[int]
    pgs: _containers.RepeatedCompositeFieldContainer[PgInfo]
    def __init__(self, pgs: _Optional[_Iterable[_Union[PgInfo, _Mapping]]] = ...) -> None: ...

class RgwUser(_message.Message):
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

class UserCreateRequest(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: RgwUser
    def __init__(self, user: _Optional[_Union[RgwUser, _Mapping]] = ...) -> None: ...

class UserListRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UserListReply(_message.Message):
    __slots__ = ("users",)
    USERS_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedCompositeFieldContainer[RgwUser]
    def __init__(self, users: _Optional[_Iterable[_Union[RgwUser, _Mapping]]] = ...) -> None: ...

class ScrubRequest(_message.Message):
    __slots__ = ("pg", "repair")
    PG_FIELD_NUMBER: _ClassVar[int]
    REPAIR_FIELD_NUMBER: _ClassVar[int]
    pg: str
    repair: bool
    def __init__(self, pg: _Optional[str] = ..., repair: _Optional[bool] = ...) -> None: ...

class ScrubError(_message.Message):
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

class ScrubReply(_message.Message):
    __slots__ = ("errors", "repaired", "pgs")
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    REPAIRED_FIELD_NUMBER: _ClassVar[int]
    PGS_FIELD_NUMBER: _ClassVar[int]
    errors: _containers.RepeatedCompositeFieldContainer[ScrubError]
    repaired: int
    pgs: int
    def __init__(self, errors: _Optional[_Iterable[_Union[ScrubError, _Mapping]]] = ..., repaired: _Optional[int] = ..., pgs: _Optional[int] = ...) -> None: ...

class CorruptChunkRequest(_message.Message):
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

class CorruptChunkReply(_message.Message):
    __slots__ = ("pg", "shard", "osd")
    PG_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    OSD_FIELD_NUMBER: _ClassVar[int]
    pg: str
    shard: int
    osd: int
    def __init__(self, pg: _Optional[str] = ..., shard: _Optional[int] = ..., osd: _Optional[int] = ...) -> None: ...

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

class FaultRecordRequest(_message.Message):
    __slots__ = ("fault",)
    FAULT_FIELD_NUMBER: _ClassVar[int]
    fault: CephFault
    def __init__(self, fault: _Optional[_Union[CephFault, _Mapping]] = ...) -> None: ...

class FaultClearRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class FaultListRequest(_message.Message):
    __slots__ = ("include_cleared",)
    INCLUDE_CLEARED_FIELD_NUMBER: _ClassVar[int]
    include_cleared: bool
    def __init__(self, include_cleared: _Optional[bool] = ...) -> None: ...

class FaultListReply(_message.Message):
    __slots__ = ("faults",)
    FAULTS_FIELD_NUMBER: _ClassVar[int]
    faults: _containers.RepeatedCompositeFieldContainer[CephFault]
    def __init__(self, faults: _Optional[_Iterable[_Union[CephFault, _Mapping]]] = ...) -> None: ...

class RbdImageRef(_message.Message):
    __slots__ = ("pool", "name")
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    pool: str
    name: str
    def __init__(self, pool: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class RbdCreateRequest(_message.Message):
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

class RbdParent(_message.Message):
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

class RbdImage(_message.Message):
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
    parent: RbdParent
    def __init__(self, name: _Optional[str] = ..., id: _Optional[str] = ..., pool: _Optional[str] = ..., size: _Optional[int] = ..., order: _Optional[int] = ..., objects: _Optional[int] = ..., snapshot_count: _Optional[int] = ..., features: _Optional[_Iterable[str]] = ..., created: _Optional[float] = ..., modified: _Optional[float] = ..., parent: _Optional[_Union[RbdParent, _Mapping]] = ...) -> None: ...

class RbdListRequest(_message.Message):
    __slots__ = ("pool",)
    POOL_FIELD_NUMBER: _ClassVar[int]
    pool: str
    def __init__(self, pool: _Optional[str] = ...) -> None: ...

class RbdListReply(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class RbdResizeRequest(_message.Message):
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

class RbdRemoveReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RbdSnapRef(_message.Message):
    __slots__ = ("pool", "image", "snap")
    POOL_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    SNAP_FIELD_NUMBER: _ClassVar[int]
    pool: str
    image: str
    snap: str
    def __init__(self, pool: _Optional[str] = ..., image: _Optional[str] = ..., snap: _Optional[str] = ...) -> None: ...

class RbdSnap(_message.Message):
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

class RbdSnapListReply(_message.Message):
    __slots__ = ("snaps",)
    SNAPS_FIELD_NUMBER: _ClassVar[int]
    snaps: _containers.RepeatedCompositeFieldContainer[RbdSnap]
    def __init__(self, snaps: _Optional[_Iterable[_Union[RbdSnap, _Mapping]]] = ...) -> None: ...

class RbdCloneRequest(_message.Message):
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

class RbdWriteRequest(_message.Message):
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

class RbdWriteReply(_message.Message):
    __slots__ = ("bytes",)
    BYTES_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    def __init__(self, bytes: _Optional[int] = ...) -> None: ...

class RbdReadRequest(_message.Message):
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

class RbdReadReply(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...
