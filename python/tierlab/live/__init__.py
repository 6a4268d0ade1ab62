"""Live execution of a model: the load generator against any HTTP server, and the
testbed — the TPC-W bookstore behind tierlab's middleware (`server/`) on a real
database, with a resource monitor — whose traces have the simulator's schema."""

from .loadgen import generate_load
from .mapping import Mapping, load_mapping

__all__ = ["Mapping", "generate_load", "load_mapping"]
