"""`ceph osd tree`, shaped like Ceph's (Reef) output."""

from __future__ import annotations

from services.ceph.crush import CrushMap


def osd_tree_text(crush: CrushMap) -> str:
    rows = [f"{'ID':>4}  {'CLASS':<5}  {'WEIGHT':>9}  {'TYPE NAME':<18}  {'STATUS':>6}  {'REWEIGHT':>8}  PRI-AFF"]
    total = sum(o.weight for o in crush.osds.values())
    rows.append(f"{-1:>4}  {'':<5}  {total:>9.5f}  {'root default':<18}")
    for host in crush.hosts.values():
        weight = sum(crush.osds[i].weight for i in host.osds)
        rows.append(f"{host.bucket_id:>4}  {'':<5}  {weight:>9.5f}  {'    host ' + host.name:<18}")
        for i in sorted(host.osds):
            o = crush.osds[i]
            rows.append(f"{o.id:>4}  {o.device_class:<5}  {o.weight:>9.5f}  {'        ' + o.name:<18}  "
                        f"{'up' if o.up else 'down':>6}  {1.0 if o.in_ else 0.0:>8.5f}  1.00000")
    return "\n".join(rows) + "\n"
