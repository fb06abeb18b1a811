"""Named MIG layouts a topology may assign to servers (the names nvidia-mig-parted users know).

A layout applies the same instances to every GPU of a server. The profile names are H100 80GB
profiles (FIDELITY.md §2); the GPU-server model owns their placement rules, this table only names
what each layout asks for.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MigLayout:
    name: str
    mig_enabled: bool
    instances: tuple[str, ...]  # GPU-instance profiles created on each GPU, in creation order


MIG_LAYOUTS: dict[str, MigLayout] = {
    layout.name: layout
    for layout in (
        MigLayout("all-disabled", False, ()),
        MigLayout("all-enabled", True, ()),  # MIG mode on, no instances yet
        MigLayout("all-1g.10gb", True, ("1g.10gb",) * 7),
        MigLayout("all-2g.20gb", True, ("2g.20gb",) * 3),
        MigLayout("all-3g.40gb", True, ("3g.40gb",) * 2),
        # 2 x 1g.10gb + 1 x 2g.20gb + 1 x 3g.40gb: all 7 compute slices; where each goes is the
        # GPU model's business (it fits only with the 3g.40gb on memory slices 4-7).
        MigLayout("all-balanced", True, ("1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb")),
    )
}
