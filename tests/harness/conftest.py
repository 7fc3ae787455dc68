from __future__ import annotations

import pytest

from envharness import Action, load_bridge


def combine(a: str, op: str, b: str) -> Action:
    return Action("combine", {"a": a, "op": op, "b": b})


SOLVE_4_4_10_10 = [combine("10", "*", "10"), combine("100", "-", "4"), combine("96", "/", "4")]


@pytest.fixture
def toy():
    env = load_bridge("toy24", task_id="4-4-10-10")
    yield env
    env.close()


@pytest.fixture
def make_toy():
    made = []

    def make(task_id: str = "4-4-10-10", **options):
        env = load_bridge("toy24", task_id=task_id, **options)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()
