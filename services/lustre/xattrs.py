"""Who may read and write which extended attribute, as Linux's VFS and capability checks decide it
(fs/xattr.c xattr_permission, security/commoncap.c cap_inode_setxattr/removexattr) and Lustre's MDS
checks again for the caller's credentials. Pure: the MDS store applies it to the inode asked about.

- `user.*`: regular files and directories only; reading needs read permission (EACCES), writing needs
  write permission, and in a sticky directory also ownership (EPERM).
- `security.*`: anyone may read; writing or removing needs CAP_SYS_ADMIN, `security.capability`
  CAP_SETFCAP (EPERM for anyone but root). One exception: `security.capability` is removed by the
  owner or a writer, as the kernel's killpriv does on a write or chown by them (it reaches the mount
  with their credentials; their own removexattr(2) of it the kernel refuses before it gets here).
- `trusted.*`: root only; another user reads ENODATA (it does not exist for them) and writes EPERM,
  and it is not listed to them.
- `lustre.lov` is the layout, answered by the client (services/lustre/client/fuse.py), not stored here;
  any other namespace (`system.*`: no ACLs here) is not supported.
"""

from __future__ import annotations

import stat as st

from services.lustre.errors import LustreError
from services.lustre.namespace import Cred, Inode, Namespace, R, W

STORED = ("user.", "security.", "trusted.")
PRIVILEGED = ("security.", "trusted.")
CAPABILITY = "security.capability"


def check_name(name: str) -> None:
    if not name.startswith(STORED) or name in STORED:
        raise LustreError("EOPNOTSUPP", f"xattr {name!r}: the MDS stores user.*, security.* and trusted.* names")
    if len(name.encode()) > 255:
        raise LustreError("ERANGE", "xattr name longer than 255 bytes (XATTR_NAME_MAX)")


def may_read(ns: Namespace, node: Inode, name: str, cred: Cred, path: str) -> bool:
    """False when the name is invisible to the caller (ENODATA); raises when reading is refused."""
    if name.startswith("trusted."):
        return cred.uid == 0
    if name.startswith("user.") and not (node.is_dir or node.is_reg):
        return False
    if name.startswith("user."):
        ns._check(node, R, cred, path)
    return True


def check_write(ns: Namespace, node: Inode, name: str, cred: Cred, path: str) -> None:
    """Setting or removing `name` on `node`: EPERM or EACCES as Linux answers, else nothing."""
    check_name(name)
    if name.startswith(PRIVILEGED):
        if cred.uid != 0:
            need = "CAP_SETFCAP" if name == CAPABILITY else "CAP_SYS_ADMIN"
            raise LustreError("EPERM", f"{path}: xattr {name} needs {need} (root)")
        return
    if not (node.is_dir or node.is_reg):
        raise LustreError("EPERM", f"{path}: user.* xattrs only on regular files and directories")
    if node.is_dir and node.mode & st.S_ISVTX and cred.uid not in (0, node.uid):
        raise LustreError("EPERM", f"{path}: sticky directory, only its owner may set its user.* xattrs")
    ns._check(node, W, cred, path)


def check_remove(ns: Namespace, node: Inode, name: str, cred: Cred, path: str) -> None:
    """Removing `name`: as writing it, but for the killpriv of `security.capability` (see above)."""
    if name == CAPABILITY and cred.uid not in (0, node.uid) and node.is_reg:
        ns._check(node, W, cred, path)
        return
    if name == CAPABILITY and cred.uid == node.uid and node.is_reg:
        return
    check_write(ns, node, name, cred, path)


def listed(names: list[str], cred: Cred) -> list[str]:
    """The names listxattr shows the caller: trusted.* only to root."""
    return [n for n in names if cred.uid == 0 or not n.startswith("trusted.")]
