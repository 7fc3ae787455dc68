from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from envharness.bridgekit.cache import bridge_cache_dir, file_lock


def test_cache_dir_prefers_envharness_cache_then_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv("ENVHARNESS_CACHE", str(tmp_path / "eh"))
    assert bridge_cache_dir("alfworld") == tmp_path / "eh" / "alfworld"
    monkeypatch.delenv("ENVHARNESS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert bridge_cache_dir("alfworld") == tmp_path / "xdg" / "envharness" / "alfworld"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert bridge_cache_dir("textworld") == Path(tmp_path / "home" / ".cache/envharness/textworld")


def test_file_lock_excludes_another_process_until_released(tmp_path):
    lock = tmp_path / "game.lock"
    probe = (
        "import fcntl, sys\n"
        "with open(sys.argv[1], 'a+b') as f:\n"
        "    try:\n"
        "        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "    except BlockingIOError:\n"
        "        print('held')\n"
        "    else:\n"
        "        print('free')\n"
    )

    def other_process_sees() -> str:
        run = [sys.executable, "-c", probe, str(lock)]
        return subprocess.run(run, capture_output=True, text=True, check=True).stdout.strip()

    with file_lock(lock):
        assert lock.exists()
        assert other_process_sees() == "held"
    assert other_process_sees() == "free"
