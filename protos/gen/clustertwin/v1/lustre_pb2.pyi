from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LustreCred(_message.Message):
    __slots__ = ("uid", "gid", "groups")
    UID_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    uid: int
    gid: int
    groups: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, uid: _Optional[int] = ..., gid: _Optional[int] = ..., groups: _Optional[_Iterable[int]] = ...) -> None: ...

class LustreStripeSpec(_message.Message):
    __slots__ = ("count", "size", "index")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    count: int
    size: int
    index: int
    def __init__(self, count: _Optional[int] = ..., size: _Optional[int] = ..., index: _Optional[int] = ...) -> None: ...

class LustreObject(_message.Message):
    __slots__ = ("ost", "objid", "seq")
    OST_FIELD_NUMBER: _ClassVar[int]
    OBJID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ost: int
    objid: int
    seq: int
    def __init__(self, ost: _Optional[int] = ..., objid: _Optional[int] = ..., seq: _Optional[int] = ...) -> None: ...

class LustreLayout(_message.Message):
    __slots__ = ("stripe_size", "gen", "pattern", "objects")
    STRIPE_SIZE_FIELD_NUMBER: _ClassVar[int]
    GEN_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    stripe_size: int
    gen: int
    pattern: str
    objects: _containers.RepeatedCompositeFieldContainer[LustreObject]
    def __init__(self, stripe_size: _Optional[int] = ..., gen: _Optional[int] = ..., pattern: _Optional[str] = ..., objects: _Optional[_Iterable[_Union[LustreObject, _Mapping]]] = ...) -> None: ...

class LustreAttr(_message.Message):
    __slots__ = ("fid", "ino", "mode", "nlink", "uid", "gid", "size", "blocks", "layout", "default_spec", "rdev", "atime_ns", "mtime_ns", "ctime_ns", "privileged_xattrs")
    FID_FIELD_NUMBER: _ClassVar[int]
    INO_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    NLINK_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_SPEC_FIELD_NUMBER: _ClassVar[int]
    RDEV_FIELD_NUMBER: _ClassVar[int]
    ATIME_NS_FIELD_NUMBER: _ClassVar[int]
    MTIME_NS_FIELD_NUMBER: _ClassVar[int]
    CTIME_NS_FIELD_NUMBER: _ClassVar[int]
    PRIVILEGED_XATTRS_FIELD_NUMBER: _ClassVar[int]
    fid: str
    ino: int
    mode: int
    nlink: int
    uid: int
    gid: int
    size: int
    blocks: int
    layout: LustreLayout
    default_spec: LustreStripeSpec
    rdev: int
    atime_ns: int
    mtime_ns: int
    ctime_ns: int
    privileged_xattrs: bool
    def __init__(self, fid: _Optional[str] = ..., ino: _Optional[int] = ..., mode: _Optional[int] = ..., nlink: _Optional[int] = ..., uid: _Optional[int] = ..., gid: _Optional[int] = ..., size: _Optional[int] = ..., blocks: _Optional[int] = ..., layout: _Optional[_Union[LustreLayout, _Mapping]] = ..., default_spec: _Optional[_Union[LustreStripeSpec, _Mapping]] = ..., rdev: _Optional[int] = ..., atime_ns: _Optional[int] = ..., mtime_ns: _Optional[int] = ..., ctime_ns: _Optional[int] = ..., privileged_xattrs: _Optional[bool] = ...) -> None: ...

class LustreDirEntry(_message.Message):
    __slots__ = ("name", "attr")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ATTR_FIELD_NUMBER: _ClassVar[int]
    name: str
    attr: LustreAttr
    def __init__(self, name: _Optional[str] = ..., attr: _Optional[_Union[LustreAttr, _Mapping]] = ...) -> None: ...

class LustreObjectRef(_message.Message):
    __slots__ = ("ost", "objid", "seq")
    OST_FIELD_NUMBER: _ClassVar[int]
    OBJID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ost: int
    objid: int
    seq: int
    def __init__(self, ost: _Optional[int] = ..., objid: _Optional[int] = ..., seq: _Optional[int] = ...) -> None: ...

class LustreTargetState(_message.Message):
    __slots__ = ("uuid", "kind", "index", "server", "capacity_bytes", "used_bytes", "avail_bytes", "inodes_total", "inodes_used", "active", "degraded", "readonly", "full")
    UUID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    AVAIL_BYTES_FIELD_NUMBER: _ClassVar[int]
    INODES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    INODES_USED_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    READONLY_FIELD_NUMBER: _ClassVar[int]
    FULL_FIELD_NUMBER: _ClassVar[int]
    uuid: str
    kind: str
    index: int
    server: str
    capacity_bytes: int
    used_bytes: int
    avail_bytes: int
    inodes_total: int
    inodes_used: int
    active: bool
    degraded: bool
    readonly: bool
    full: bool
    def __init__(self, uuid: _Optional[str] = ..., kind: _Optional[str] = ..., index: _Optional[int] = ..., server: _Optional[str] = ..., capacity_bytes: _Optional[int] = ..., used_bytes: _Optional[int] = ..., avail_bytes: _Optional[int] = ..., inodes_total: _Optional[int] = ..., inodes_used: _Optional[int] = ..., active: _Optional[bool] = ..., degraded: _Optional[bool] = ..., readonly: _Optional[bool] = ..., full: _Optional[bool] = ...) -> None: ...

class LustreFault(_message.Message):
    __slots__ = ("id", "kind", "oss", "ost", "injected_at", "active", "cleared_at", "effect")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    OSS_FIELD_NUMBER: _ClassVar[int]
    OST_FIELD_NUMBER: _ClassVar[int]
    INJECTED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    CLEARED_AT_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: str
    oss: str
    ost: int
    injected_at: float
    active: bool
    cleared_at: float
    effect: str
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., oss: _Optional[str] = ..., ost: _Optional[int] = ..., injected_at: _Optional[float] = ..., active: _Optional[bool] = ..., cleared_at: _Optional[float] = ..., effect: _Optional[str] = ...) -> None: ...

class LustreEvent(_message.Message):
    __slots__ = ("seq", "time", "node", "kind", "message", "ost", "mdt", "oss", "to", "fault")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OST_FIELD_NUMBER: _ClassVar[int]
    MDT_FIELD_NUMBER: _ClassVar[int]
    OSS_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    FAULT_FIELD_NUMBER: _ClassVar[int]
    seq: int
    time: float
    node: str
    kind: str
    message: str
    ost: int
    mdt: int
    oss: str
    to: str
    fault: LustreFault
    def __init__(self, seq: _Optional[int] = ..., time: _Optional[float] = ..., node: _Optional[str] = ..., kind: _Optional[str] = ..., message: _Optional[str] = ..., ost: _Optional[int] = ..., mdt: _Optional[int] = ..., oss: _Optional[str] = ..., to: _Optional[str] = ..., fault: _Optional[_Union[LustreFault, _Mapping]] = ..., **kwargs) -> None: ...

class LustreMdsGetattrRequest(_message.Message):
    __slots__ = ("path", "cred")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    path: str
    cred: LustreCred
    def __init__(self, path: _Optional[str] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ...) -> None: ...

class LustreMdsGetattrResponse(_message.Message):
    __slots__ = ("attr",)
    ATTR_FIELD_NUMBER: _ClassVar[int]
    attr: LustreAttr
    def __init__(self, attr: _Optional[_Union[LustreAttr, _Mapping]] = ...) -> None: ...

class LustreMdsCreateRequest(_message.Message):
    __slots__ = ("path", "mode", "cred", "spec", "delay_layout", "exclusive")
    PATH_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    DELAY_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    path: str
    mode: int
    cred: LustreCred
    spec: LustreStripeSpec
    delay_layout: bool
    exclusive: bool
    def __init__(self, path: _Optional[str] = ..., mode: _Optional[int] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ..., spec: _Optional[_Union[LustreStripeSpec, _Mapping]] = ..., delay_layout: _Optional[bool] = ..., exclusive: _Optional[bool] = ...) -> None: ...

class LustreMdsCreateResponse(_message.Message):
    __slots__ = ("attr", "parent")
    ATTR_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    attr: LustreAttr
    parent: LustreAttr
    def __init__(self, attr: _Optional[_Union[LustreAttr, _Mapping]] = ..., parent: _Optional[_Union[LustreAttr, _Mapping]] = ...) -> None: ...

class LustreMdsMkdirRequest(_message.Message):
    __slots__ = ("path", "mode", "cred", "spec")
    PATH_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    path: str
    mode: int
    cred: LustreCred
    spec: LustreStripeSpec
    def __init__(self, path: _Optional[str] = ..., mode: _Optional[int] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ..., spec: _Optional[_Union[LustreStripeSpec, _Mapping]] = ...) -> None: ...

class LustreMdsMkdirResponse(_message.Message):
    __slots__ = ("attr",)
    ATTR_FIELD_NUMBER: _ClassVar[int]
    attr: LustreAttr
    def __init__(self, attr: _Optional[_Union[LustreAttr, _Mapping]] = ...) -> None: ...

class LustreMdsUnlinkRequest(_message.Message):
    __slots__ = ("path", "cred", "open")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    OPEN_FIELD_NUMBER: _ClassVar[int]
    path: str
    cred: LustreCred
    open: bool
    def __init__(self, path: _Optional[str] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ..., open: _Optional[bool] = ...) -> None: ...

class LustreMdsUnlinkResponse(_message.Message):
    __slots__ = ("freed", "linked", "parent")
    FREED_FIELD_NUMBER: _ClassVar[int]
    LINKED_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    freed: _containers.RepeatedCompositeFieldContainer[LustreObject]
    linked: _containers.RepeatedScalarFieldContainer[str]
    parent: LustreAttr
    def __init__(self, freed: _Optional[_Iterable[_Union[LustreObject, _Mapping]]] = ..., linked: _Optional[_Iterable[str]] = ..., parent: _Optional[_Union[LustreAttr, _Mapping]] = ...) -> None: ...

class LustreMdsRmdirRequest(_message.Message):
    __slots__ = ("path", "cred")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    path: str
    cred: LustreCred
    def __init__(self, path: _Optional[str] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ...) -> None: ...

class LustreMdsRmdirResponse(_message.Message):
    __slots__ = ("freed",)
    FREED_FIELD_NUMBER: _ClassVar[int]
    freed: _containers.RepeatedCompositeFieldContainer[LustreObject]
    def __init__(self, freed: _Optional[_Iterable[_Union[LustreObject, _Mapping]]] = ...) -> None: ...

class LustreMdsRenameRequest(_message.Message):
    __slots__ = ("src", "dst", "cred")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    src: str
    dst: str
    cred: LustreCred
    def __init__(self, src: _Optional[str] = ..., dst: _Optional[str] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ...) -> None: ...

class LustreMdsRenameResponse(_message.Message):
    __slots__ = ("freed", "linked")
    FREED_FIELD_NUMBER: _ClassVar[int]
    LINKED_FIELD_NUMBER: _ClassVar[int]
    freed: _containers.RepeatedCompositeFieldContainer[LustreObject]
    linked: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, freed: _Optional[_Iterable[_Union[LustreObject, _Mapping]]] = ..., linked: _Optional[_Iterable[str]] = ...) -> None: ...

class LustreMdsLinkRequest(_message.Message):
    __slots__ = ("src", "dst", "cred")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    src: str
    dst: str
    cred: LustreCred
    def __init__(self, src: _Optional[str] = ..., dst: _Optional[str] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ...) -> None: ...

class LustreMdsLinkResponse(_message.Message):
    __slots__ = ("attr", "linked")
    ATTR_FIELD_NUMBER: _ClassVar[int]
    LINKED_FIELD_NUMBER: _ClassVar[int]
    attr: LustreAttr
    linked: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, attr: _Optional[_Union[LustreAttr, _Mapping]] = ..., linked: _Optional[_Iterable[str]] = ...) -> None: ...

class LustreMdsSymlinkRequest(_message.Message):
    __slots__ = ("path", "target", "cred")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    path: str
    target: str
    cred: LustreCred
    def __init__(self, path: _Optional[str] = ..., target: _Optional[str] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ...) -> None: ...

class LustreMdsSymlinkResponse(_message.Message):
    __slots__ = ("attr",)
    ATTR_FIELD_NUMBER: _ClassVar[int]
    attr: LustreAttr
    def __init__(self, attr: _Optional[_Union[LustreAttr, _Mapping]] = ...) -> None: ...

class LustreMdsMknodRequest(_message.Message):
    __slots__ = ("path", "mode", "rdev", "cred")
    PATH_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    RDEV_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    path: str
    mode: int
    rdev: int
    cred: LustreCred
    def __init__(self, path: _Optional[str] = ..., mode: _Optional[int] = ..., rdev: _Optional[int] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ...) -> None: ...

class LustreMdsMknodResponse(_message.Message):
    __slots__ = ("attr",)
    ATTR_FIELD_NUMBER: _ClassVar[int]
    attr: LustreAttr
    def __init__(self, attr: _Optional[_Union[LustreAttr, _Mapping]] = ...) -> None: ...

class LustreMdsReadlinkRequest(_message.Message):
    __slots__ = ("path", "cred")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    path: str
    cred: LustreCred
    def __init__(self, path: _Optional[str] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ...) -> None: ...

class LustreMdsReadlinkResponse(_message.Message):
    __slots__ = ("target",)
    TARGET_FIELD_NUMBER: _ClassVar[int]
    target: str
    def __init__(self, target: _Optional[str] = ...) -> None: ...

class LustreMdsReaddirRequest(_message.Message):
    __slots__ = ("path", "cred", "page_size", "page_token")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    path: str
    cred: LustreCred
    page_size: int
    page_token: str
    def __init__(self, path: _Optional[str] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class LustreMdsReaddirResponse(_message.Message):
    __slots__ = ("entries", "next_page_token")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[LustreDirEntry]
    next_page_token: str
    def __init__(self, entries: _Optional[_Iterable[_Union[LustreDirEntry, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class LustreMdsSetattrRequest(_message.Message):
    __slots__ = ("path", "cred", "mode", "uid", "gid", "size", "grow_only", "explicit_times", "append", "atime_ns", "mtime_ns", "read_atime")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    GROW_ONLY_FIELD_NUMBER: _ClassVar[int]
    EXPLICIT_TIMES_FIELD_NUMBER: _ClassVar[int]
    APPEND_FIELD_NUMBER: _ClassVar[int]
    ATIME_NS_FIELD_NUMBER: _ClassVar[int]
    MTIME_NS_FIELD_NUMBER: _ClassVar[int]
    READ_ATIME_FIELD_NUMBER: _ClassVar[int]
    path: str
    cred: LustreCred
    mode: int
    uid: int
    gid: int
    size: int
    grow_only: bool
    explicit_times: bool
    append: int
    atime_ns: int
    mtime_ns: int
    read_atime: bool
    def __init__(self, path: _Optional[str] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ..., mode: _Optional[int] = ..., uid: _Optional[int] = ..., gid: _Optional[int] = ..., size: _Optional[int] = ..., grow_only: _Optional[bool] = ..., explicit_times: _Optional[bool] = ..., append: _Optional[int] = ..., atime_ns: _Optional[int] = ..., mtime_ns: _Optional[int] = ..., read_atime: _Optional[bool] = ...) -> None: ...

class LustreMdsSetattrResponse(_message.Message):
    __slots__ = ("attr", "linked")
    ATTR_FIELD_NUMBER: _ClassVar[int]
    LINKED_FIELD_NUMBER: _ClassVar[int]
    attr: LustreAttr
    linked: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, attr: _Optional[_Union[LustreAttr, _Mapping]] = ..., linked: _Optional[_Iterable[str]] = ...) -> None: ...

class LustreMdsSetstripeRequest(_message.Message):
    __slots__ = ("path", "spec", "cred")
    PATH_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    path: str
    spec: LustreStripeSpec
    cred: LustreCred
    def __init__(self, path: _Optional[str] = ..., spec: _Optional[_Union[LustreStripeSpec, _Mapping]] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ...) -> None: ...

class LustreMdsSetstripeResponse(_message.Message):
    __slots__ = ("attr",)
    ATTR_FIELD_NUMBER: _ClassVar[int]
    attr: LustreAttr
    def __init__(self, attr: _Optional[_Union[LustreAttr, _Mapping]] = ...) -> None: ...

class LustreMdsGetstripeRequest(_message.Message):
    __slots__ = ("path", "cred")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    path: str
    cred: LustreCred
    def __init__(self, path: _Optional[str] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ...) -> None: ...

class LustreMdsGetstripeResponse(_message.Message):
    __slots__ = ("attr",)
    ATTR_FIELD_NUMBER: _ClassVar[int]
    attr: LustreAttr
    def __init__(self, attr: _Optional[_Union[LustreAttr, _Mapping]] = ...) -> None: ...

class LustreMdsStatfsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LustreMdsStatfsResponse(_message.Message):
    __slots__ = ("fsname", "mdts", "osts")
    FSNAME_FIELD_NUMBER: _ClassVar[int]
    MDTS_FIELD_NUMBER: _ClassVar[int]
    OSTS_FIELD_NUMBER: _ClassVar[int]
    fsname: str
    mdts: _containers.RepeatedCompositeFieldContainer[LustreTargetState]
    osts: _containers.RepeatedCompositeFieldContainer[LustreTargetState]
    def __init__(self, fsname: _Optional[str] = ..., mdts: _Optional[_Iterable[_Union[LustreTargetState, _Mapping]]] = ..., osts: _Optional[_Iterable[_Union[LustreTargetState, _Mapping]]] = ...) -> None: ...

class LustreMdsGetxattrRequest(_message.Message):
    __slots__ = ("path", "name", "cred")
    PATH_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    path: str
    name: str
    cred: LustreCred
    def __init__(self, path: _Optional[str] = ..., name: _Optional[str] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ...) -> None: ...

class LustreMdsGetxattrResponse(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: bytes
    def __init__(self, value: _Optional[bytes] = ...) -> None: ...

class LustreMdsSetxattrRequest(_message.Message):
    __slots__ = ("path", "name", "value", "cred", "flags")
    PATH_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    path: str
    name: str
    value: bytes
    cred: LustreCred
    flags: int
    def __init__(self, path: _Optional[str] = ..., name: _Optional[str] = ..., value: _Optional[bytes] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ..., flags: _Optional[int] = ...) -> None: ...

class LustreMdsSetxattrResponse(_message.Message):
    __slots__ = ("linked",)
    LINKED_FIELD_NUMBER: _ClassVar[int]
    linked: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, linked: _Optional[_Iterable[str]] = ...) -> None: ...

class LustreMdsListxattrRequest(_message.Message):
    __slots__ = ("path", "cred", "page_size", "page_token")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    path: str
    cred: LustreCred
    page_size: int
    page_token: str
    def __init__(self, path: _Optional[str] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class LustreMdsListxattrResponse(_message.Message):
    __slots__ = ("names", "next_page_token")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    next_page_token: str
    def __init__(self, names: _Optional[_Iterable[str]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class LustreMdsRemovexattrRequest(_message.Message):
    __slots__ = ("path", "name", "cred")
    PATH_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CRED_FIELD_NUMBER: _ClassVar[int]
    path: str
    name: str
    cred: LustreCred
    def __init__(self, path: _Optional[str] = ..., name: _Optional[str] = ..., cred: _Optional[_Union[LustreCred, _Mapping]] = ...) -> None: ...

class LustreMdsRemovexattrResponse(_message.Message):
    __slots__ = ("linked",)
    LINKED_FIELD_NUMBER: _ClassVar[int]
    linked: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, linked: _Optional[_Iterable[str]] = ...) -> None: ...

class LustreMdsFindRequest(_message.Message):
    __slots__ = ("start", "name", "size", "stripe_count", "ost", "type")
    START_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    STRIPE_COUNT_FIELD_NUMBER: _ClassVar[int]
    OST_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    start: str
    name: str
    size: str
    stripe_count: str
    ost: int
    type: str
    def __init__(self, start: _Optional[str] = ..., name: _Optional[str] = ..., size: _Optional[str] = ..., stripe_count: _Optional[str] = ..., ost: _Optional[int] = ..., type: _Optional[str] = ...) -> None: ...

class LustreMdsFindResponse(_message.Message):
    __slots__ = ("paths",)
    PATHS_FIELD_NUMBER: _ClassVar[int]
    paths: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, paths: _Optional[_Iterable[str]] = ...) -> None: ...

class LustreMdsStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LustreMdsStatusResponse(_message.Message):
    __slots__ = ("name", "role", "fsname", "inodes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    FSNAME_FIELD_NUMBER: _ClassVar[int]
    INODES_FIELD_NUMBER: _ClassVar[int]
    name: str
    role: str
    fsname: str
    inodes: int
    def __init__(self, name: _Optional[str] = ..., role: _Optional[str] = ..., fsname: _Optional[str] = ..., inodes: _Optional[int] = ...) -> None: ...

class LustreParam(_message.Message):
    __slots__ = ("name", "value", "min", "max")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: int
    min: int
    max: int
    def __init__(self, name: _Optional[str] = ..., value: _Optional[int] = ..., min: _Optional[int] = ..., max: _Optional[int] = ...) -> None: ...

class LustreMdsGetParamsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LustreMdsGetParamsResponse(_message.Message):
    __slots__ = ("params",)
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    params: _containers.RepeatedCompositeFieldContainer[LustreParam]
    def __init__(self, params: _Optional[_Iterable[_Union[LustreParam, _Mapping]]] = ...) -> None: ...

class LustreMdsSetParamRequest(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class LustreMdsSetParamResponse(_message.Message):
    __slots__ = ("param",)
    PARAM_FIELD_NUMBER: _ClassVar[int]
    param: LustreParam
    def __init__(self, param: _Optional[_Union[LustreParam, _Mapping]] = ...) -> None: ...

class LustreMdsWatchEventsRequest(_message.Message):
    __slots__ = ("since_seq",)
    SINCE_SEQ_FIELD_NUMBER: _ClassVar[int]
    since_seq: int
    def __init__(self, since_seq: _Optional[int] = ...) -> None: ...

class LustreMdsWatchEventsResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: LustreEvent
    def __init__(self, event: _Optional[_Union[LustreEvent, _Mapping]] = ...) -> None: ...

class LustreMdsLdlmRequest(_message.Message):
    __slots__ = ("client_uuid", "cancel")
    CLIENT_UUID_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    client_uuid: str
    cancel: int
    def __init__(self, client_uuid: _Optional[str] = ..., cancel: _Optional[int] = ...) -> None: ...

class LustreMdsLdlmResponse(_message.Message):
    __slots__ = ("path", "subtree", "ready", "seq")
    PATH_FIELD_NUMBER: _ClassVar[int]
    SUBTREE_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    path: str
    subtree: bool
    ready: bool
    seq: int
    def __init__(self, path: _Optional[str] = ..., subtree: _Optional[bool] = ..., ready: _Optional[bool] = ..., seq: _Optional[int] = ...) -> None: ...

class LustreOssReadRequest(_message.Message):
    __slots__ = ("obj", "offset", "length")
    OBJ_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    obj: LustreObjectRef
    offset: int
    length: int
    def __init__(self, obj: _Optional[_Union[LustreObjectRef, _Mapping]] = ..., offset: _Optional[int] = ..., length: _Optional[int] = ...) -> None: ...

class LustreOssReadResponse(_message.Message):
    __slots__ = ("data", "object_size")
    DATA_FIELD_NUMBER: _ClassVar[int]
    OBJECT_SIZE_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    object_size: int
    def __init__(self, data: _Optional[bytes] = ..., object_size: _Optional[int] = ...) -> None: ...

class LustreOssWriteRequest(_message.Message):
    __slots__ = ("obj", "offset", "data", "sync")
    OBJ_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    SYNC_FIELD_NUMBER: _ClassVar[int]
    obj: LustreObjectRef
    offset: int
    data: bytes
    sync: bool
    def __init__(self, obj: _Optional[_Union[LustreObjectRef, _Mapping]] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ..., sync: _Optional[bool] = ...) -> None: ...

class LustreOssWriteResponse(_message.Message):
    __slots__ = ("written", "object_size")
    WRITTEN_FIELD_NUMBER: _ClassVar[int]
    OBJECT_SIZE_FIELD_NUMBER: _ClassVar[int]
    written: int
    object_size: int
    def __init__(self, written: _Optional[int] = ..., object_size: _Optional[int] = ...) -> None: ...

class LustreOssPunchRequest(_message.Message):
    __slots__ = ("obj", "size")
    OBJ_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    obj: LustreObjectRef
    size: int
    def __init__(self, obj: _Optional[_Union[LustreObjectRef, _Mapping]] = ..., size: _Optional[int] = ...) -> None: ...

class LustreOssPunchResponse(_message.Message):
    __slots__ = ("object_size", "exists")
    OBJECT_SIZE_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    object_size: int
    exists: bool
    def __init__(self, object_size: _Optional[int] = ..., exists: _Optional[bool] = ...) -> None: ...

class LustreOssDestroyRequest(_message.Message):
    __slots__ = ("obj",)
    OBJ_FIELD_NUMBER: _ClassVar[int]
    obj: LustreObjectRef
    def __init__(self, obj: _Optional[_Union[LustreObjectRef, _Mapping]] = ...) -> None: ...

class LustreOssDestroyResponse(_message.Message):
    __slots__ = ("exists",)
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    exists: bool
    def __init__(self, exists: _Optional[bool] = ...) -> None: ...

class LustreOssSyncRequest(_message.Message):
    __slots__ = ("obj",)
    OBJ_FIELD_NUMBER: _ClassVar[int]
    obj: LustreObjectRef
    def __init__(self, obj: _Optional[_Union[LustreObjectRef, _Mapping]] = ...) -> None: ...

class LustreOssSyncResponse(_message.Message):
    __slots__ = ("object_size", "exists")
    OBJECT_SIZE_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    object_size: int
    exists: bool
    def __init__(self, object_size: _Optional[int] = ..., exists: _Optional[bool] = ...) -> None: ...

class LustreOssGetattrRequest(_message.Message):
    __slots__ = ("obj",)
    OBJ_FIELD_NUMBER: _ClassVar[int]
    obj: LustreObjectRef
    def __init__(self, obj: _Optional[_Union[LustreObjectRef, _Mapping]] = ...) -> None: ...

class LustreOssGetattrResponse(_message.Message):
    __slots__ = ("object_size", "exists")
    OBJECT_SIZE_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    object_size: int
    exists: bool
    def __init__(self, object_size: _Optional[int] = ..., exists: _Optional[bool] = ...) -> None: ...

class LustreOssStatfsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LustreOssStatfsResponse(_message.Message):
    __slots__ = ("name", "osts")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OSTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    osts: _containers.RepeatedCompositeFieldContainer[LustreTargetState]
    def __init__(self, name: _Optional[str] = ..., osts: _Optional[_Iterable[_Union[LustreTargetState, _Mapping]]] = ...) -> None: ...

class LustreOssSetOstStateRequest(_message.Message):
    __slots__ = ("ost", "active", "degraded", "readonly", "capacity_bytes")
    OST_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    READONLY_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    ost: int
    active: bool
    degraded: bool
    readonly: bool
    capacity_bytes: int
    def __init__(self, ost: _Optional[int] = ..., active: _Optional[bool] = ..., degraded: _Optional[bool] = ..., readonly: _Optional[bool] = ..., capacity_bytes: _Optional[int] = ...) -> None: ...

class LustreOssSetOstStateResponse(_message.Message):
    __slots__ = ("name", "osts")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OSTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    osts: _containers.RepeatedCompositeFieldContainer[LustreTargetState]
    def __init__(self, name: _Optional[str] = ..., osts: _Optional[_Iterable[_Union[LustreTargetState, _Mapping]]] = ...) -> None: ...

class LustreOssInjectFaultRequest(_message.Message):
    __slots__ = ("kind", "ost")
    KIND_FIELD_NUMBER: _ClassVar[int]
    OST_FIELD_NUMBER: _ClassVar[int]
    kind: str
    ost: int
    def __init__(self, kind: _Optional[str] = ..., ost: _Optional[int] = ...) -> None: ...

class LustreOssInjectFaultResponse(_message.Message):
    __slots__ = ("fault",)
    FAULT_FIELD_NUMBER: _ClassVar[int]
    fault: LustreFault
    def __init__(self, fault: _Optional[_Union[LustreFault, _Mapping]] = ...) -> None: ...

class LustreOssClearFaultRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class LustreOssClearFaultResponse(_message.Message):
    __slots__ = ("fault",)
    FAULT_FIELD_NUMBER: _ClassVar[int]
    fault: LustreFault
    def __init__(self, fault: _Optional[_Union[LustreFault, _Mapping]] = ...) -> None: ...

class LustreOssListFaultsRequest(_message.Message):
    __slots__ = ("include_cleared", "page_size", "page_token")
    INCLUDE_CLEARED_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    include_cleared: bool
    page_size: int
    page_token: str
    def __init__(self, include_cleared: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class LustreOssListFaultsResponse(_message.Message):
    __slots__ = ("faults", "next_page_token")
    FAULTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    faults: _containers.RepeatedCompositeFieldContainer[LustreFault]
    next_page_token: str
    def __init__(self, faults: _Optional[_Iterable[_Union[LustreFault, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class LustreOssWatchEventsRequest(_message.Message):
    __slots__ = ("since_seq",)
    SINCE_SEQ_FIELD_NUMBER: _ClassVar[int]
    since_seq: int
    def __init__(self, since_seq: _Optional[int] = ...) -> None: ...

class LustreOssWatchEventsResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: LustreEvent
    def __init__(self, event: _Optional[_Union[LustreEvent, _Mapping]] = ...) -> None: ...
