import pytest

from lrucache import LRUCache


def test_get_and_put():
    cache = LRUCache(2)
    cache.put("a", 1)
    assert cache.get("a") == 1
    assert cache.get("b") is None
    assert cache.get("b", 0) == 0


def test_evicts_least_recently_used():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("c", 3)
    assert "a" not in cache
    assert cache.keys() == ["b", "c"]


def test_get_refreshes():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.get("a")
    cache.put("c", 3)
    assert cache.keys() == ["a", "c"]


def test_contains_does_not_refresh():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert "a" in cache
    cache.put("c", 3)
    assert "a" not in cache


def test_update_keeps_size():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("a", 5)
    assert len(cache) == 1
    assert cache.get("a") == 5


def test_statistics():
    cache = LRUCache(1)
    cache.put("a", 1)
    cache.get("a")
    cache.get("zz")
    assert (cache.hits, cache.misses) == (1, 1)


@pytest.mark.parametrize("capacity", [0, -1, 1.5, None])
def test_bad_capacity(capacity):
    with pytest.raises(ValueError):
        LRUCache(capacity)
