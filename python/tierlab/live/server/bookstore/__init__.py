"""The TPC-W bookstore: the 14 web interactions over the TPC-W schema, as a WSGI
application for the live testbed (SQLite by default, PostgreSQL for the real runs)."""

from .app import Bookstore
from .data import Database, populate

__all__ = ["Bookstore", "Database", "populate"]
