"""The TextWorld bridge: text adventures made by TextWorld's own game generator.

Registered as ``textworld``; needs the ``textworld`` extra (``pip install
'envharness[textworld]'``) to play, and imports ``textworld`` only when a game is generated or
played.

- :mod:`~envharness.bridges.textworld.env`: :class:`TextWorldEnv`, the bridge, and
  :func:`ensure_game`, which generates and caches one game.
"""

from __future__ import annotations

from envharness.bridges.textworld.env import (
    GameSettings,
    TextWorldEnv,
    default_cache_dir,
    ensure_game,
)

__all__ = ["GameSettings", "TextWorldEnv", "default_cache_dir", "ensure_game"]
