"""The ALFWorld bridge: household tasks from ALFRED, played as TextWorld PDDL games.

Registered as ``alfworld``; needs the ``alfworld`` extra (``pip install 'envharness[alfworld]'``)
and ALFWorld's data: ``$ALFWORLD_DATA`` (or the ``data_dir`` option) names the folder that
``alfworld-download`` fills. A task id is a trial's path inside its split folder, e.g.
``pick_and_place_simple-Box-None-Dresser-224/trial_T20190907_164104_229696``; the splits are the
data folders ``train``, ``valid_train``, ``valid_seen`` and ``valid_unseen`` (``test`` is
``valid_unseen``). ``alfworld`` is imported only when an env is built.

- :mod:`~envharness.bridges.alfworld.env`: :class:`AlfWorldEnv`, the bridge.
- ``_data``: the data folder, splits and task ids; ``_build``: rebuilding and caching game
  files; ``_kit``: ALFWorld's and TextWorld's pieces, imported lazily, with memoized PDDL
  translation; ``_game``: one running game; ``_oracle``: the hand-coded expert as the oracle;
  ``_stages``: stage candidates that hide the task's object.

Example:
    >>> from envharness import list_tasks
    >>> list_tasks("alfworld", "valid_seen")[:1]  # doctest: +SKIP
    ['look_at_obj_in_light-AlarmClock-None-DeskLamp-323/trial_T20190909_044715_250790']
"""

from __future__ import annotations

from envharness.bridges.alfworld._build import default_cache_dir
from envharness.bridges.alfworld._data import SPLITS, TASK_TYPES
from envharness.bridges.alfworld.env import AlfWorldEnv

__all__ = ["SPLITS", "TASK_TYPES", "AlfWorldEnv", "default_cache_dir"]
