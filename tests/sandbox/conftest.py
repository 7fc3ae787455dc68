from __future__ import annotations

import pytest

from envharness.sandbox import template


@pytest.fixture
def template_pid() -> int:
    """The running template's pid (started if needed)."""
    current = template.get_template()
    current.hello  # noqa: B018 - waits until it is up
    return current.pid
