"""Being written."""


class HeuristicDesigner:
    """Being written."""
