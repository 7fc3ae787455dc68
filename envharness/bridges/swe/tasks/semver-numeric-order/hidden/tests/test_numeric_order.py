from semverlite import Version, latest


def test_two_digit_minor():
    assert Version("1.9.0") < Version("1.10.0")


def test_two_digit_patch_and_major():
    assert Version("0.0.9") < Version("0.0.10")
    assert Version("9.0.0") < Version("10.0.0")


def test_sorting():
    versions = ["1.10.0", "1.2.0", "1.9.3", "0.20.1"]
    assert [str(v) for v in sorted(Version(v) for v in versions)] == [
        "0.20.1",
        "1.2.0",
        "1.9.3",
        "1.10.0",
    ]


def test_latest_with_two_digits():
    assert latest(["0.9.1", "0.10.0"]) == Version("0.10.0")
