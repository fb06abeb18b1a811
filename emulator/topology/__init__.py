"""The topology model: declarative YAML files describing a twin, validated, and their figures.

topo = load_topology("mini")     # a name under <repo>/topologies/ or a path
topo.gpu_servers                 # list[GpuServerSpec], in order
topo.derive().to_dict()          # GPUs, power, switches, links, bisection, capacities
"""

from emulator.topology.derive import DerivedFigures
from emulator.topology.errors import TopologyError, TopologyNotFound
from emulator.topology.load import TOPOLOGIES_DIR, available_topologies, load_topology
from emulator.topology.mig_layouts import MIG_LAYOUTS, MigLayout
from emulator.topology.schema import TopologySpec
from emulator.topology.servers import GpuServerSpec
from emulator.topology.topology import Topology

__all__ = [
    "MIG_LAYOUTS",
    "TOPOLOGIES_DIR",
    "DerivedFigures",
    "GpuServerSpec",
    "MigLayout",
    "Topology",
    "TopologyError",
    "TopologyNotFound",
    "TopologySpec",
    "available_topologies",
    "load_topology",
]
