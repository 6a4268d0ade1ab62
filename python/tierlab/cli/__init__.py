"""`tierlab` command line: one module per command group (`run`: simulate, schema,
ramp; `analyze`; `size` and `cost`; `live` and `load`), this module the entry point."""

from __future__ import annotations

import os
import sys
import warnings

import click

from ..errors import InputError, ModelError, TraceError
from ..model import ModelWarning
from .analyze import analyze
from .common import err
from .imports import import_cmd
from .live import live, load_cmd
from .report import report_cmd
from .run import ramp_cmd, schema_cmd, simulate_cmd
from .size import cost, size
from .usl import usl


@click.group()
@click.version_option(package_name="tierlab")
def cli() -> None:
    """Find and fix the soft-resource bottlenecks of multi-tier web applications."""


for command in (simulate_cmd, schema_cmd, ramp_cmd, analyze, size, cost, load_cmd, live, usl, import_cmd, report_cmd):
    cli.add_command(command)


def main() -> None:
    """Entry point: user errors are one clear message, never a traceback."""
    debug = bool(os.environ.get("TIERLAB_DEBUG"))

    def show_warning(message, category, filename, lineno, file=None, line=None):
        err.print(f"[yellow]warning:[/] {message}")

    warnings.showwarning = show_warning
    warnings.simplefilter("always", ModelWarning)
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        err.print("aborted")
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except (ModelError, TraceError, InputError) as e:
        err.print(f"error: {e}", style="red", markup=False, highlight=False)
        sys.exit(2)
    except Exception as e:  # noqa: BLE001 — the last line of defence for a clear message
        if debug:
            raise
        err.print(f"error: {type(e).__name__}: {e}", style="red", markup=False, highlight=False)
        err.print("(set TIERLAB_DEBUG=1 for the traceback)", style="dim")
        sys.exit(1)
