"""A least-recently-used cache with hit statistics."""

from lrucache.cache import LRUCache

__all__ = ["LRUCache"]
