"""Keeps pytest out of the task repositories: they are data, run only inside an episode."""

collect_ignore_glob = ["*"]
