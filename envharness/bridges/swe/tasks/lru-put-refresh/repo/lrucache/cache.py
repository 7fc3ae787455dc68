"""``LRUCache``: a mapping that forgets its least recently used entries."""

from collections import OrderedDict


class LRUCache:
    """Keeps the ``capacity`` most recently used entries.

    ``get`` and ``put`` count as uses; ``in`` and ``len`` do not.
    """

    def __init__(self, capacity):
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be a positive int, got {capacity!r}")
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._entries = OrderedDict()

    def get(self, key, default=None):
        """The value of ``key`` (now the most recently used), else ``default``."""
        if key not in self._entries:
            self.misses += 1
            return default
        self.hits += 1
        self._entries.move_to_end(key)
        return self._entries[key]

    def put(self, key, value):
        """Stores ``value`` under ``key`` as the most recently used entry.

        When the cache is full and ``key`` is new, the least recently used entry is evicted.
        """
        if key in self._entries:
            self._entries[key] = value
            return
        if len(self._entries) >= self.capacity:
            self._entries.popitem(last=False)
        self._entries[key] = value

    def keys(self):
        """The keys, from the least to the most recently used."""
        return list(self._entries)

    def __contains__(self, key):
        return key in self._entries

    def __len__(self):
        return len(self._entries)

    def __repr__(self):
        return f"LRUCache(capacity={self.capacity}, size={len(self)})"
