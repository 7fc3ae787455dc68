from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from envharness import Evaluation, TrajectoryError
from envharness.rollout.store import RunStore
from envharness.rollout.trajectory import Step, Trajectory


def traj(seed: int, *, task_id: str = "1-1-4-6", success: bool = False, policy: str = "p"):
    return Trajectory(
        task_id,
        "toy24",
        "spec1",
        {"spec_id": "spec1"},
        seed,
        policy,
        steps=[Step(0, {"tool": "undo", "args": {}}, "Nothing to undo.", invalid="nothing")],
        evaluation=Evaluation(success, float(success)),
        end_reason="terminated" if success else "budget",
    )


def lines(run_dir: Path) -> list[str]:
    return (run_dir / "trajectories.jsonl").read_text().splitlines()


def test_append_and_reload(tmp_path):
    run = tmp_path / "runs" / "first"
    with RunStore(run) as store:
        keys = [store.add(traj(seed, success=seed == 1)) for seed in range(3)]
        assert len(store) == 3
    assert keys == [RunStore.key("spec1", "p", seed) for seed in range(3)]
    assert len(lines(run)) == 3
    with RunStore(run) as store:
        assert store.trajectories() == [traj(seed, success=seed == 1) for seed in range(3)]
        assert list(store) == store.trajectories()
        assert store.get(keys[1]) == traj(1, success=True)
        assert store.get(RunStore.key("spec1", "p", 9)) is None
        assert store.has(keys[0]) and keys[2] in store and "nope" not in store
        assert store.keys() == keys
        store.add(traj(3))
    assert len(lines(run)) == 4


def test_index_is_written_and_keeps_its_creation_time(tmp_path):
    with RunStore(tmp_path) as store:
        store.add(traj(0, success=True))
        store.add(traj(0))
        store.add(traj(1, task_id="3-3-8-8"))
    index = json.loads((tmp_path / "index.json").read_text())
    assert index["trajectories"] == 3
    assert index["keys"][RunStore.key("spec1", "p", 0)] == {"count": 2, "records": [0, 1]}
    assert index["tasks"] == {
        "1-1-4-6": {"count": 2, "successes": 1},
        "3-3-8-8": {"count": 1, "successes": 0},
    }
    assert index["updated_at"] >= index["created_at"]
    with RunStore(tmp_path) as store:
        assert store.created_at == index["created_at"]
        assert [t.success for t in store.get_all(RunStore.key("spec1", "p", 0))] == [True, False]
        assert store.get(RunStore.key("spec1", "p", 0)).success  # the first one
    assert not list(tmp_path.glob(".index-*"))  # no temporary files left behind


def test_missing_keys_for_resume(tmp_path):
    wanted = [RunStore.key("spec1", "p", seed) for seed in range(5)]
    with RunStore(tmp_path) as store:
        for seed in (0, 2):
            store.add(traj(seed))
    with RunStore(tmp_path) as store:
        assert store.missing(wanted) == [wanted[1], wanted[3], wanted[4]]
        assert store.missing([wanted[4], wanted[4], wanted[0]]) == [wanted[4]]
        assert store.missing([RunStore.key("spec1", "other", 0)]) == [
            RunStore.key("spec1", "other", 0)
        ]
        assert RunStore.key_of(traj(2)) not in store.missing(wanted)


def test_half_written_last_line_is_dropped_and_the_file_repaired(tmp_path, caplog):
    with RunStore(tmp_path) as store:
        store.add(traj(0))
        store.add(traj(1))
    path = tmp_path / "trajectories.jsonl"
    good = path.read_bytes()
    with path.open("ab") as handle:
        handle.write(traj(2).to_json().encode()[:57])  # killed mid-write
    with caplog.at_level(logging.WARNING, logger="envharness.rollout"):
        store = RunStore(tmp_path)
    assert "dropping line 3" in caplog.text and "without a trailing newline" in caplog.text
    assert path.read_bytes() == good
    assert len(store) == 2
    store.add(traj(2))
    store.close()
    assert [Trajectory.from_json(line).seed for line in lines(tmp_path)] == [0, 1, 2]


def test_unparsable_complete_last_line_is_dropped(tmp_path, caplog):
    with RunStore(tmp_path) as store:
        store.add(traj(0))
    path = tmp_path / "trajectories.jsonl"
    good = path.read_bytes()
    with path.open("ab") as handle:
        handle.write(b'{"task_id": "x"\n')
    with caplog.at_level(logging.WARNING, logger="envharness.rollout"):
        with RunStore(tmp_path) as store:
            assert len(store) == 1
    assert "that does not parse" in caplog.text
    assert path.read_bytes() == good


def test_corrupt_middle_line_raises_naming_the_line(tmp_path):
    with RunStore(tmp_path) as store:
        for seed in range(3):
            store.add(traj(seed))
    path = tmp_path / "trajectories.jsonl"
    rows = path.read_text().splitlines(keepends=True)
    rows[1] = rows[1][:40] + "\n"
    path.write_text("".join(rows))
    before = path.read_bytes()
    with pytest.raises(TrajectoryError, match=r"line 2 is corrupt .*not dropped"):
        RunStore(tmp_path)
    assert path.read_bytes() == before  # nothing was lost
    with pytest.raises(TrajectoryError, match="line 2 is corrupt"):
        RunStore(tmp_path, readonly=True)
    # The failed open released the lock: a fixed file opens again.
    path.write_text(rows[0] + rows[2])
    with RunStore(tmp_path) as store:
        assert [t.seed for t in store] == [0, 2]


def test_blank_lines_are_skipped(tmp_path):
    path = tmp_path / "trajectories.jsonl"
    path.write_text(traj(0).to_json() + "\n\n" + traj(1).to_json() + "\n")
    with RunStore(tmp_path) as store:
        assert [t.seed for t in store] == [0, 1]


def test_threads_appending_concurrently(tmp_path):
    store = RunStore(tmp_path)
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for seed in range(offset, offset + 100):
                store.add(traj(seed))
                store.has(RunStore.key("spec1", "p", seed))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k * 100,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.close()
    assert errors == []
    seeds = sorted(Trajectory.from_json(line).seed for line in lines(tmp_path))
    assert seeds == list(range(200))
    with RunStore(tmp_path) as again:
        assert len(again) == 200 and again.missing(
            [RunStore.key("spec1", "p", s) for s in range(201)]
        ) == [RunStore.key("spec1", "p", 200)]
        index = json.loads((tmp_path / "index.json").read_text())
        assert index["trajectories"] == 200


HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, str(os.getpid()).encode())
print("locked", flush=True)
sys.stdin.read()
"""


def test_lock_held_by_another_process(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(tmp_path / ".lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(
            TrajectoryError, match=rf"locked by another process \(pid {holder.pid}\)"
        ):
            RunStore(tmp_path)
        with RunStore(tmp_path, readonly=True) as reader:  # readers take no lock
            assert len(reader) == 0
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    with RunStore(tmp_path) as store:  # released with the process
        store.add(traj(0))


def test_second_writer_in_the_same_process_is_refused(tmp_path):
    with RunStore(tmp_path):
        with pytest.raises(TrajectoryError, match="another RunStore in this process"):
            RunStore(tmp_path)
    RunStore(tmp_path).close()  # closed: the lock is free again


def test_readonly_store(tmp_path, caplog):
    with pytest.raises(TrajectoryError, match="no run directory"):
        RunStore(tmp_path / "absent", readonly=True)
    with RunStore(tmp_path) as writer:
        writer.add(traj(0))
        with (tmp_path / "trajectories.jsonl").open("ab") as handle:
            handle.write(b'{"task_id"')  # a writer mid-line
        with caplog.at_level(logging.WARNING, logger="envharness.rollout"):
            reader = RunStore(tmp_path, readonly=True)
        assert "read-only: not repaired" in caplog.text
        assert [t.seed for t in reader] == [0]
        with pytest.raises(TrajectoryError, match="the store is read-only"):
            reader.add(traj(1))
        reader.close()
    assert (tmp_path / "trajectories.jsonl").read_bytes().endswith(b'{"task_id"')


def test_add_errors(tmp_path):
    store = RunStore(tmp_path)
    with pytest.raises(TypeError, match="expected a Trajectory, got dict"):
        store.add({"task_id": "t"})
    bad = traj(0)
    bad.steps[0].reward = float("nan")
    with pytest.raises(TrajectoryError, match="cannot be stored as JSON"):
        store.add(bad)
    assert len(store) == 0 and (tmp_path / "trajectories.jsonl").read_bytes() == b""
    store.close()
    store.close()  # idempotent
    with pytest.raises(TrajectoryError, match="the store is closed"):
        store.add(traj(0))


def test_reading_after_close_is_an_error(tmp_path):
    store = RunStore(tmp_path)
    key = store.add(traj(0))
    store.close()
    assert store.has(key)
    with pytest.raises(TrajectoryError, match="the store is closed"):
        store.get(key)


def test_bad_run_dir_and_keys(tmp_path):
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(TrajectoryError, match="is not a directory"):
        RunStore(file)
    with pytest.raises(TypeError, match="expected a path for run_dir, got int"):
        RunStore(3)
    with pytest.raises(TypeError, match="expected a non-empty str spec_id"):
        RunStore.key("", "p", 0)
    with pytest.raises(TypeError, match="expected a str policy description"):
        RunStore.key("s", None, 0)
    with pytest.raises(TypeError, match="expected an int seed"):
        RunStore.key("s", "p", "0")


def test_keys_are_unambiguous():
    assert RunStore.key("a|b", "c", 1) != RunStore.key("a", "b|c", 1)
    assert json.loads(RunStore.key("a", 'odd "policy"', 2)) == ["a", 'odd "policy"', 2]


def test_index_interval(tmp_path):
    def indexed() -> int:
        return json.loads((tmp_path / "index.json").read_text())["trajectories"]

    with RunStore(tmp_path, index_interval=0) as store:
        store.add(traj(0))
        assert indexed() == 1  # rewritten after every append
        store.add(traj(1))
        assert indexed() == 2
    with RunStore(tmp_path, index_interval=3600) as store:
        store.add(traj(2))
        store.add(traj(3))
        assert indexed() == 2  # written on open; appends wait for the interval ...
    assert indexed() == 4  # ... or for close()
    with pytest.raises(ValueError, match="expected index_interval to be a number of seconds"):
        RunStore(tmp_path, index_interval=-1)
