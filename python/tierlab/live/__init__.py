"""The live testbed: a load generator that runs a model's workload against a real
server, and the tools to profile that server the way the simulator is profiled."""

from .load import load
from .mapping import Mapping, load_mapping

__all__ = ["load", "load_mapping", "Mapping"]
