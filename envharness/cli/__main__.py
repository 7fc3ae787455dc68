"""``python -m envharness.cli``: the same as the ``envharness`` command."""

from envharness.cli import app

app(prog_name="envharness")
