"""`tierlab` command line: one module per command group (`run`: simulate, schema,
ramp; `analyze`; `size` and `cost`; `live` and `load`), this module the entry point."""

from __future__ import annotations

import os
import sys
import warnings
from importlib import import_module

import click

from .._signals import stop_on_sigterm
from ..errors import InputError, ModelError, ModelWarning, TraceError
from .common import err

# Each command's module is imported when the command runs (or `--help` lists it), so
# that `tierlab simulate` does not pay for the live server's, the report's or the
# analyses' libraries.
COMMANDS = {
    "simulate": "run:simulate_cmd",
    "schema": "run:schema_cmd",
    "ramp": "run:ramp_cmd",
    "analyze": "analyze:analyze",
    "size": "size:size",
    "cost": "size:cost",
    "load": "live:load_cmd",
    "live": "live:live",
    "usl": "usl:usl",
    "twin": "twin:twin",
    "import": "imports:import_cmd",
    "report": "report:report_cmd",
    "control": "control:control_cmd",
}


class WholeHelp(click.Group):
    """A group whose list of commands gives each one's first sentence whole: click cuts
    it to what fits beside the names on one line ("Black-box capacity: a load ramp
    and the knee of its p90..."); the list wraps it instead."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        commands = ((name, self.get_command(ctx, name)) for name in self.list_commands(ctx))
        rows = [(name, c.get_short_help_str(limit=10_000)) for name, c in commands if c is not None and not c.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class LazyGroup(WholeHelp):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, name = COMMANDS[cmd_name].split(":")
        return getattr(import_module(f".{module}", __name__), name)


@click.group(cls=LazyGroup)
@click.version_option(package_name="tierlab")
def cli() -> None:
    """Find and fix the soft-resource bottlenecks of multi-tier web applications."""


def main() -> None:
    """Entry point: user errors are one clear message, never a traceback."""
    debug = bool(os.environ.get("TIERLAB_DEBUG"))

    def show_warning(message, category, filename, lineno, file=None, line=None):
        err.print(f"[yellow]warning:[/] {message}")

    warnings.showwarning = show_warning
    warnings.simplefilter("always", ModelWarning)
    stop_on_sigterm()
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
