"""When the scan for the files holding a key is left out (``every_file_held``)."""

from engine.tables.file_rewrite import every_file_held


def test_every_file_is_held_when_fewer_than_one_file_is_expected_to_be_spared():
    assert every_file_held(1, 1)  # a one-file table: the one file holds the key
    assert not every_file_held(2, 1)  # one key spares one of two files
    assert every_file_held(2, 2)  # 2 * (1/2)**2 = 0.5 files spared
    assert not every_file_held(4, 3)  # 4 * (3/4)**3 = 1.7 files spared
    assert every_file_held(16, 43)  # 16 * (15/16)**43 = 0.997
    assert not every_file_held(16, 42)  # 16 * (15/16)**42 = 1.06


def test_no_key_or_no_file_never_skips_the_scan():
    assert not every_file_held(5, 0)
    assert not every_file_held(0, 5)
