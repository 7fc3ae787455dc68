from lrucache import LRUCache


def test_put_existing_key_refreshes_it():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)
    cache.put("c", 3)
    assert "a" in cache and "b" not in cache
    assert cache.get("a") == 10


def test_keys_order_after_update():
    cache = LRUCache(3)
    for key in "xyz":
        cache.put(key, key.upper())
    cache.put("x", "again")
    assert cache.keys() == ["y", "z", "x"]
