"""`lfs` output, shaped as real `lfs` prints it (lfs.c / liblustreapi formats), from model state.

Renderers are pure functions of the models, so every surface (CLI, gRPC, FUSE xattrs) prints the
same thing. Formats: getstripe `"\\t%6u\\t%14llu\\t%#13llx\\t%#14llx"` object rows; df `UUF` = `%-20s`,
columns `%11s`, use `%3d%%`, human sizes `%8.1f%c` with lfs's COOK (divide while > 1024).
"""

from __future__ import annotations

from collections.abc import Sequence

from services.lustre.layout import Layout, StripeSpec
from services.lustre.ost import MdtState, OstState, target_name

_SUFFIX = "KMGTPEZY"


def getstripe(path: str, layout: Layout, ost_marker: int | None = None) -> str:
    """`lfs getstripe FILE` (`ost_marker`: `--ost N` marks that OST's row with ` *`)."""
    lines = [
        path,
        f"lmm_stripe_count:  {layout.stripe_count}",
        f"lmm_stripe_size:   {layout.stripe_size}",
        f"lmm_pattern:       {layout.pattern}",
        f"lmm_layout_gen:    {layout.gen}",
        f"lmm_stripe_offset: {layout.stripe_offset}",
        "\tobdidx\t\t objid\t\t objid\t\t group",
    ]
    for o in layout.objects:
        mark = " *" if ost_marker == o.ost else ""
        lines.append(f"\t{o.ost:6d}\t{o.objid:14d}\t{o.objid:#13x}\t{o.seq:#14x}{mark}")
    return "\n".join(lines) + "\n"


def getstripe_dir(path: str, spec: StripeSpec | None) -> str:
    """`lfs getstripe -d DIR`: the directory's default layout (fs defaults show as 0 / -1)."""
    s = spec or StripeSpec()
    return (f"{path}\nstripe_count:  {s.count} stripe_size:   {s.size} "
            f"pattern:       raid0 stripe_offset: {s.index}\n")


def cook(value: float) -> str:
    """lfs's human size: divide by 1024 while above 1024, `%8.1f` and a K/M/G/T suffix (bytes in)."""
    radix = 0
    while value > 1024:
        value /= 1024
        radix += 1
    if radix == 0:
        return f"{int(value)}"
    return f"{value:8.1f}{_SUFFIX[radix - 1]}"


def _row(uuid: str, total: int, used: int, avail: int, mount: str, human: bool, inodes: bool) -> str:
    ratio = used / (used + avail) if used + avail > 0 else 0.0
    if human and not inodes:
        cols = [cook(float(v)) for v in (total, used, avail)]
    else:
        cols = [str(v if inodes or human else v >> 10) for v in (total, used, avail)]
    pct = f"{int(ratio * 100 + 0.5):3d}%"
    return f"{uuid:<20} {cols[0]:>11} {cols[1]:>11} {cols[2]:>11} {pct:>4} {mount}"


def df(fsname: str, mount: str, mdts: Sequence[MdtState], osts: Sequence[OstState],
       human: bool = False, inodes: bool = False) -> str:
    """`lfs df [-h|-i] MOUNT`: one row per MDT and OST, then `filesystem_summary:`.

    Offline targets print `OST0003             : inactive device`. The summary sums the active
    OSTs' space (or, with -i, the MDTs' inodes; file count is bounded by the MDTs).
    """
    if inodes:
        head = ("Inodes", "IUsed", "IFree", "IUse%")
    else:
        head = ("bytes" if human else "1K-blocks", "Used", "Available", "Use%")
    lines = [f"{'UUID':<20} {head[0]:>11} {head[1]:>11} {head[2]:>11} {head[3]:>4} Mounted on"]
    sum_total = sum_used = sum_avail = 0

    def figures(t: MdtState | OstState) -> tuple[int, int, int]:
        if inodes:
            return t.inodes_total, t.inodes_used, t.inodes_free
        return t.capacity_bytes, t.used_bytes, t.avail_bytes

    for kind, targets in (("MDT", mdts), ("OST", osts)):
        for t in sorted(targets, key=lambda t: t.index):
            if not t.active:
                lines.append(f"{kind}{t.index:04x}{'':<13}: inactive device")
                continue
            total, used, avail = figures(t)
            row = _row(target_name(fsname, kind, t.index), total, used, avail, f"{mount}[{kind}:{t.index}]",
                       human, inodes)
            if isinstance(t, OstState) and (t.degraded or t.readonly):
                row += " " + ("D" if t.degraded else "") + ("R" if t.readonly else "")
            lines.append(row)
            if (kind == "MDT") == inodes:
                sum_total, sum_used, sum_avail = sum_total + total, sum_used + used, sum_avail + avail
    lines.append("")
    lines.append(_row("filesystem_summary:", sum_total, sum_used, sum_avail, mount, human, inodes))
    return "\n".join(lines) + "\n\n"


def osts(fsname: str, targets: Sequence[OstState]) -> str:
    """`lfs osts`: `OBDS:` then `INDEX: UUID ACTIVE|INACTIVE`."""
    rows = [f"{t.index}: {target_name(fsname, 'OST', t.index)} {'ACTIVE' if t.active else 'INACTIVE'}"
            for t in sorted(targets, key=lambda t: t.index)]
    return "OBDS:\n" + "".join(r + "\n" for r in rows)


def mdts(fsname: str, targets: Sequence[MdtState]) -> str:
    """`lfs mdts`: `MDTS:` then `INDEX: UUID ACTIVE|INACTIVE`."""
    rows = [f"{t.index}: {target_name(fsname, 'MDT', t.index)} {'ACTIVE' if t.active else 'INACTIVE'}"
            for t in sorted(targets, key=lambda t: t.index)]
    return "MDTS:\n" + "".join(r + "\n" for r in rows)
