"""``envharness export RUN --format chat-jsonl|parquet``: trajectories as chat training data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from envharness.cli._app import _clean_errors, _stdout, app
from envharness.rollout.export import EXPORT_FORMATS, export_run


@app.command("export")
@_clean_errors
def export(
    run: Annotated[
        Path,
        typer.Argument(
            metavar="RUN", help="A run directory: from `envharness rollout` or `envharness rig`."
        ),
    ],
    format: Annotated[
        str,
        typer.Option("--format", "-f", help=f"The file format: {' or '.join(EXPORT_FORMATS)}."),
    ] = "chat-jsonl",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="The output file (default: beside RUN, e.g. RUN.chat.jsonl)."
        ),
    ] = None,
    success_only: Annotated[
        bool, typer.Option("--success-only", help="Only episodes the verifier counts as solved.")
    ] = False,
    task: Annotated[
        list[str] | None,
        typer.Option("--task", "-t", metavar="ID", help="Only this task (repeatable)."),
    ] = None,
    spec: Annotated[
        list[str] | None,
        typer.Option("--spec", metavar="ID", help="Only this spec id (repeatable)."),
    ] = None,
) -> None:
    """Export a run's trajectories as OpenAI-style chat records with tool calls.

    One record per trajectory: the chat policy's system prompt, the tools (OpenAI function
    schemas), the instruction and every observation as user/tool messages, every action as an
    assistant tool call, and metadata (the verifier's reward, success and score, bridge, task,
    spec id, policy, seed, steps, and an accepted spec's lineage). chat-jsonl writes one JSON
    object per line; parquet (needs pyarrow: the 'export' extra) stores messages, tools and
    metadata as JSON string columns beside flat columns for filtering.
    """
    result = export_run(
        run,
        out,
        format=format,
        success_only=success_only,
        tasks=task or (),
        specs=spec or (),
    )
    _stdout().print(
        f"exported {result.records} of {result.total} trajectories "
        f"({result.successes} successful) as {result.format}: {escape(str(result.path))}"
    )
