"""Tests of the deterministic bottom-k sample and of choosing split points from it."""

import collections
import random
import re

import pytest

from webarchive_indexing.cdx.splits import (PAST_END, Reservoir, choose_splits, format_splits,
                                            merge, parse_splits, sample_key, shard_of)


def cdx_lines(count, seed=1):
    """Distinct CDX-like lines, some repeated, in random order."""
    rng = random.Random(seed)
    lines = [f"com,example{i % 37},www)/page/{i} 2024010{i % 10}000000 {{\"status\": \"200\"}}"
             for i in range(count)]
    lines += rng.sample(lines, count // 20)
    rng.shuffle(lines)
    return lines


def bottom(lines, size):
    return sorted((sample_key(line), line) for line in lines)[:size]


def strictly_increasing(items):
    return all(a < b for a, b in zip(items, items[1:]))


def test_sample_key_is_fixed_width_hex_and_deterministic():
    assert sample_key("com,example)/ 20240101000000") == "5018fa622a1a68f9"  # pinned: changes every sample
    for line in ["", "a", "é" * 1000, "com,例え)/ 2024"]:
        assert re.fullmatch("[0-9a-f]{16}", sample_key(line))
    keys = [sample_key(line) for line in cdx_lines(1000)]
    # fixed width: text order is numeric order
    assert sorted(keys) == sorted(keys, key=lambda k: int(k, 16))


@pytest.mark.parametrize("size", [1, 10, 500, 5000])
def test_reservoir_keeps_bottom_k_whatever_the_order(size):
    lines = cdx_lines(2000)
    expected = bottom(lines, size)
    for seed in range(4):
        shuffled = random.Random(seed).sample(lines, len(lines))
        reservoir = Reservoir(size)
        for line in shuffled:
            reservoir.add(line)
        assert reservoir.items() == expected
        assert len(reservoir._heap) <= size


@pytest.mark.parametrize("parts", [1, 2, 7, 50])
def test_merged_reservoirs_equal_the_global_sample(parts):
    lines, size = cdx_lines(3000), 300
    rng = random.Random(parts)
    reservoirs = [Reservoir(size) for _ in range(parts)]
    for line in lines:
        rng.choice(reservoirs).add(line)
    pairs = [pair for reservoir in reservoirs for pair in reservoir.items()]
    rng.shuffle(pairs)
    assert merge(pairs, size) == [line for _, line in bottom(lines, size)]


def test_reservoir_ties_are_broken_by_the_line():
    for order in (["b", "a", "c"], ["c", "b", "a"], ["a", "c", "b"]):
        reservoir = Reservoir(2)
        for line in order:
            reservoir.add(line, key="0000000000000000")
        assert reservoir.items() == [("0000000000000000", "a"), ("0000000000000000", "b")]


def test_reservoir_uses_a_given_key():
    reservoir = Reservoir(1)
    reservoir.add("x", key="1")
    reservoir.add("y", key="0")
    assert reservoir.items() == [("0", "y")]


def test_reservoir_size_must_be_positive():
    with pytest.raises(ValueError):
        Reservoir(0)


def test_splits_take_every_scaler_th_line_of_the_sample():
    sample = [f"line{i:03d}" for i in range(100)]
    random.Random(0).shuffle(sample)
    assert choose_splits(sample, 10) == [f"line{i:03d}" for i in range(10, 100, 10)]
    assert choose_splits(sample + sample, 10) == [f"line{i:03d}" for i in range(10, 100, 10)]
    assert choose_splits(sample, 3) == ["line033", "line066"]


@pytest.mark.parametrize("shards", [1, 2, 3, 7, 10, 64, 300, 1001])
@pytest.mark.parametrize("sample_size", [0, 1, 2, 5, 63, 64, 65, 299, 300, 301, 1000, 30000])
def test_choose_splits_always_gives_shards_minus_one_increasing_lines(shards, sample_size):
    sample = cdx_lines(sample_size, seed=sample_size)[:sample_size]
    distinct = sorted(set(sample))
    splits = choose_splits(sample, shards)
    assert len(splits) == shards - 1
    assert strictly_increasing(splits)
    if len(distinct) >= shards:
        assert set(splits) <= set(distinct)
        assert distinct[0] not in splits   # the first shard is never empty
    else:
        real, synthetic = splits[:len(distinct[1:])], splits[len(distinct[1:]):]
        assert real == distinct[1:]
        assert all(key.startswith(PAST_END) for key in synthetic)
        # every sample line lands in the first len(distinct) shards: the last ones are empty
        assert {shard_of(line, splits) for line in sample} == set(range(len(distinct)))


def test_identical_lines_all_go_to_the_first_shard():
    splits = choose_splits(["com,example)/ 2024"] * 1000, 5)
    assert len(splits) == 4 and strictly_increasing(splits)
    assert all(split.startswith(PAST_END) for split in splits)
    assert shard_of("com,example)/ 2024", splits) == 0
    assert shard_of("zz,last)/ 2024", splits) == 0


def test_synthetic_splits_stay_increasing_past_ten():
    splits = choose_splits(["a"], 12)
    assert splits[0] == PAST_END + "00" and splits[-1] == PAST_END + "10"
    assert strictly_increasing(splits)


@pytest.mark.parametrize("shards", [0, -1])
def test_choose_splits_needs_a_shard(shards):
    with pytest.raises(ValueError):
        choose_splits(["a"], shards)


def test_shard_of_boundaries():
    splits = ["b", "d"]
    assert [shard_of(line, splits) for line in ["", "a", "b", "b ", "c", "d", "e"]] == [0, 0, 1, 1, 1, 2, 2]
    assert shard_of("anything", []) == 0


def shard_sizes(lines, key, sample_size=3000, shards=10):
    """Shard sizes of ``lines`` when split at points sampled with ``key``."""
    reservoir = Reservoir(sample_size)
    for line in lines:
        reservoir.add(line, key(line))
    splits = choose_splits([line for _, line in reservoir.items()], shards)
    return collections.Counter(shard_of(line, splits) for line in lines)


def balanced(sizes, shards=10, tolerance=0.35):
    mean = sum(sizes.values()) / shards
    return all(abs(sizes[shard] - mean) <= tolerance * mean for shard in range(shards))


def test_sample_is_unbiased():
    # sort order (host, then path) unrelated to the insertion order and to the hash
    lines = [f"com,site{(i * 7919) % 1000:03d})/p/{i} 20240101000000" for i in range(100000)]
    sizes = shard_sizes(lines, sample_key)
    assert len(sizes) == 10 and balanced(sizes)


def test_unbiasedness_check_catches_a_biased_key():
    # A key with few distinct values (4 bits here; the same goes for a truncated or
    # rounded random number) leaves most of the choice to the line tie-break, i.e. to
    # CDX order: the sample crowds into the start of the input.
    lines = [f"com,site{(i * 7919) % 1000:03d})/p/{i} 20240101000000" for i in range(100000)]
    assert not balanced(shard_sizes(lines, lambda line: sample_key(line)[:1]))


def test_splits_file_round_trip():
    splits = ["com,a)/ 1", "com,b)/ \r\x1c\x85\u2028 2", "jp,例え)/ 3", PAST_END + "0"]
    text = format_splits(splits)
    assert text.count("\n") == len(splits) and text.endswith("\n")
    assert parse_splits(text) == splits
    assert format_splits([]) == "" and parse_splits("") == []


@pytest.mark.parametrize("text, message", [
    ("a\nc\nb\n", "line 3: split 'b' is not greater than line 2"),
    ("a\na\n", "line 2: split 'a' is not greater than line 1"),
    ("a\n\n", "line 2: split '' is not greater"),
    ("a\nb", "does not end with a newline"),
])
def test_parse_splits_rejects(text, message):
    with pytest.raises(ValueError, match=message):
        parse_splits(text)


def test_format_splits_rejects():
    with pytest.raises(ValueError, match="line 2: .* not greater"):
        format_splits(["b", "a"])
    with pytest.raises(ValueError, match="line 1: .* contains a newline"):
        format_splits(["a\nb"])
