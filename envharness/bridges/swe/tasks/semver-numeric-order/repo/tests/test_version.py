import pytest

from semverlite import Version, latest


def test_parse_and_print():
    assert str(Version("1.4.2")) == "1.4.2"
    assert str(Version("v2.0.0")) == "2.0.0"
    assert Version("3.1.4").major == 3


@pytest.mark.parametrize("text", ["1.2", "1.2.3.4", "01.2.3", "a.b.c", ""])
def test_bad_versions(text):
    with pytest.raises(ValueError, match="not a MAJOR.MINOR.PATCH"):
        Version(text)


def test_order():
    assert Version("1.2.3") < Version("1.2.4") < Version("1.3.0") < Version("2.0.0")
    assert Version("1.2.3") == Version("v1.2.3")
    assert Version("2.0.0") >= Version("1.9.9")


def test_bump():
    assert Version("1.2.3").bump("patch") == Version("1.2.4")
    assert Version("1.2.3").bump("minor") == Version("1.3.0")
    assert Version("1.2.3").bump("major") == Version("2.0.0")
    with pytest.raises(ValueError):
        Version("1.2.3").bump("build")


def test_latest():
    assert latest(["1.0.0", "2.1.0", "2.0.5"]) == Version("2.1.0")
    with pytest.raises(ValueError):
        latest([])


def test_hashable():
    assert len({Version("1.0.0"), Version("v1.0.0")}) == 1
