"""The typer app and what every command shares: consoles and clean error exits."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from envharness import __version__
from envharness.errors import (
    EnvHarnessError,
)

if TYPE_CHECKING:
    pass

__all__ = ["app"]

app = typer.Typer(
    name="envharness",
    help="Turn static agent benchmarks into customizable environments.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

_P = ParamSpec("_P")
_R = TypeVar("_R")


BridgeOptions = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-O",
        metavar="KEY=VALUE",
        help="A bridge option (repeatable); VALUE is read as JSON when it parses, else as text: "
        "-O runtime=local -O max_steps=20 -O 'env_kwargs={\"is_slippery\": false}'.",
    ),
]
"""The ``--option KEY=VALUE`` parameter the commands that build a bridge share."""


def parse_options(pairs: list[str] | None) -> dict[str, Any]:
    """The ``load_bridge`` options given as ``KEY=VALUE`` strings.

    >>> parse_options(["runtime=local", "max_steps=20", "data_dir=/data/alfworld"])
    {'runtime': 'local', 'max_steps': 20, 'data_dir': '/data/alfworld'}

    Raises:
        typer.BadParameter: If a pair has no ``=`` or an empty key, a key repeats, or the key is
            ``task_id`` (the task has its own option).
    """
    options: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise typer.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--option")
        if key in options:
            raise typer.BadParameter(f"option {key!r} is given twice", param_hint="--option")
        if key == "task_id":
            raise typer.BadParameter(
                "the task is not a bridge option; choose it with --task (play, check-bridge) "
                "or --tasks/--harness (rollout, rig)",
                param_hint="--option",
            )
        try:
            options[key] = json.loads(raw)
        except ValueError:
            options[key] = raw
    return options


# C0 controls but newline and tab, DEL, and C1 controls: what can drive a terminal (ESC starts
# CSI and OSC sequences: clear the screen, set the title, write the clipboard with OSC 52).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    r"""``text`` with every terminal control character shown as an escape (``\x1b``).

    Text from an env, a policy or rules code reaches the operator's terminal only through this.

    Example:
        >>> printable("a\x1b]0;title\x07b")
        'a\\x1b]0;title\\x07b'
    """
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def _printable_text(text: Text) -> Text:
    """A copy of ``text`` whose characters are printable, its styled pieces kept."""
    if not _CONTROL.search(text.plain):
        return text
    cuts = sorted({offset for span in text.spans for offset in (span.start, span.end)})
    clean = Text(style=text.style, justify=text.justify, no_wrap=text.no_wrap, end=text.end)
    for piece in text.divide(cuts) if cuts else [text]:
        style = piece.spans[-1].style if piece.spans else None
        clean.append(printable(piece.plain), style=style)
    return clean


class SafeConsole(Console):
    """A rich ``Console`` that escapes terminal control characters in everything it prints.

    Plain strings (table cells included) are escaped when rendered, :class:`~rich.text.Text`
    objects when printed; rich's own styling is untouched.
    """

    def render_str(self, text: str, **kwargs: Any) -> Text:
        """Renders ``text`` with its control characters escaped."""
        return super().render_str(printable(text), **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """Prints ``objects``, escaping control characters in their text."""
        clean = [_printable_text(o) if isinstance(o, Text) else o for o in objects]
        super().print(*clean, **kwargs)


def _stdout() -> Console:
    return SafeConsole(highlight=False, soft_wrap=True)


def _stderr() -> Console:
    return SafeConsole(stderr=True, highlight=False, soft_wrap=True)


def _clean_errors(command: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turns an :class:`EnvHarnessError` into one red ``error: ...`` line and exit code 2."""

    @functools.wraps(command)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return command(*args, **kwargs)
        except EnvHarnessError as e:
            _stderr().print(Text(f"error: {e}", style="red"))
            raise typer.Exit(2) from None

    return wrapper


def _version(value: bool) -> None:
    if value:
        typer.echo(f"envharness {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """Turn static agent benchmarks into customizable environments."""
