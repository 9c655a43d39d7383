"""The error helpers (harness/errors.py) and the sub-seeds (harness/seeds.py), checked in process: the exception
family, which system errors are the user's to mend, a message on one line, the first wrong field of a file, a
stream that outlives its reader (on a real pipe whose reader is closed), and the seeds every case draws from,
pinned so that a case replays byte for byte after any change.

Written against the mutants mutmut 3.8.1 made of these two files (tests/MUTANTS.md, forty-first pass).
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import random
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from harness.errors import InputError, NotWritten, OutlivesReader, RunFailed, no_room, one_line, one_of, wrong_field
from harness.seeds import DEFAULT_SEEDS, SEED_MAX, rng, sub_seed

# -- the exception family -----------------------------------------------------------------------------------------


def test_the_exceptions_are_one_family_under_value_error() -> None:
    assert InputError.__mro__[1] is ValueError
    assert RunFailed.__mro__[1] is InputError
    assert NotWritten.__mro__[1] is RunFailed


def test_not_written_keeps_its_message_its_folder_and_the_systems_reason(tmp_path: Path) -> None:
    error = NotWritten("cannot write; fix: free some room", tmp_path / "run", "No space left on device")
    assert str(error) == "cannot write; fix: free some room"
    assert error.args == ("cannot write; fix: free some room",)
    assert error.folder == tmp_path / "run"
    assert error.reason == "No space left on device"
    with pytest.raises(RunFailed, match=r"^cannot write; fix: free some room$"):
        raise error


# -- no_room ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES])
def test_no_room_a_quota_a_read_only_disk_or_no_permission_are_the_users_to_mend(code: int) -> None:
    assert no_room(OSError(code, os.strerror(code))) is True
    assert no_room(PermissionError(code, "denied")) is True


@pytest.mark.parametrize("code", [errno.ENOENT, errno.EISDIR, errno.ENOTDIR, errno.EIO, errno.EBADF, errno.EPIPE])
def test_other_system_errors_may_be_the_harnesss_own(code: int) -> None:
    # Only the four kinds above (and, by a deliberate change, perhaps EPERM) are the user's: these are not.
    assert no_room(OSError(code, os.strerror(code))) is False


def test_an_os_error_without_an_errno_is_not_no_room() -> None:
    assert OSError("disk trouble").errno is None
    assert no_room(OSError("disk trouble")) is False


# -- one_line -----------------------------------------------------------------------------------------------------


def test_one_line_collapses_every_run_of_whitespace_to_one_space_and_trims_the_ends() -> None:
    assert one_line("  a\tb\n\n c\r\n d  ") == "a b c d"
    assert one_line("word") == "word"
    assert one_line("") == ""
    assert one_line(" \n\t ") == ""


@pytest.mark.parametrize(
    "sep", ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
)
def test_one_line_leaves_no_line_break_of_any_kind(sep: str) -> None:
    text = one_line(f"first{sep}second{sep}{sep}third")
    assert text == "first second third"
    assert text.splitlines() == [text]


def test_one_line_says_any_object_as_its_str() -> None:
    assert one_line(ValueError("bad\nvalue")) == "bad value"
    assert one_line(12) == "12"
    assert one_line(None) == "None"
    assert one_line(["a\nb"]) == "['a\\nb']"  # a list's str shows its item's newline escaped: already one line


def test_one_line_is_cut_at_200_by_default() -> None:
    assert one_line("x" * 199) == "x" * 199
    assert one_line("x" * 200) == "x" * 200
    assert one_line("x" * 201) == "x" * 200
    assert one_line("ab " * 100) == ("ab " * 100)[:200]
    assert len(one_line("ab " * 100)) == 200


def test_one_line_is_cut_at_the_limit_given_after_collapsing() -> None:
    assert one_line("a\n\n\n\nb c", 3) == "a b"
    assert one_line("abcdef", 4) == "abcd"
    assert one_line("abcdef", 6) == "abcdef"
    assert one_line("abcdef", 5) == "abcde"
    assert one_line("abcdef", 0) == ""


# -- wrong_field --------------------------------------------------------------------------------------------------


class _Range(TypedDict):
    first: int
    last: int


class _Shape(TypedDict):
    seeds: list[Annotated[int, Field(ge=1)]] | _Range
    task_name: str
    counts: dict[str, int]


_SHAPE = TypeAdapter(_Shape)


def _error(adapter: TypeAdapter[Any], value: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        adapter.validate_python(value)
    return caught.value


def test_one_wrong_field_is_named_by_its_path_and_what_it_should_be() -> None:
    error = _error(_SHAPE, {"seeds": [1], "task_name": 3, "counts": {}})
    assert error.error_count() == 1
    assert wrong_field(error) == "field 'task_name': Input should be a valid string"


def test_a_nested_field_is_named_by_its_dotted_path_with_its_keys_and_indexes() -> None:
    error = _error(_SHAPE, {"seeds": [1], "task_name": "t", "counts": {"reads": "x"}})
    assert wrong_field(error) == (
        "field 'counts.reads': Input should be a valid integer, unable to parse string as an integer"
    )


def test_the_names_pydantic_gives_a_unions_members_are_left_out_of_the_path() -> None:
    error = _error(_SHAPE, {"seeds": [1, 5, 0], "task_name": "t", "counts": {}})
    assert [e["loc"] for e in error.errors()] == [("seeds", "list[constrained-int]", 2), ("seeds", "_Range")]
    assert wrong_field(error) == "field 'seeds.2': Input should be greater than or equal to 1 (+1 more)"
    error = _error(TypeAdapter(_Range | list[int]), {"first": 1})
    assert [e["loc"] for e in error.errors()] == [("_Range", "last"), ("list[int]",)]
    assert wrong_field(error) == "field 'last': Field required (+1 more)"


def test_a_wrong_field_at_the_top_is_said_so() -> None:
    error = _error(_SHAPE, [1])
    assert wrong_field(error) == "field '(top level)': Input should be a valid dictionary"
    error = _error(TypeAdapter(list[int] | _Range), "x")
    assert [e["loc"] for e in error.errors()] == [("list[int]",), ("_Range",)]
    assert wrong_field(error) == "field '(top level)': Input should be a valid list (+1 more)"


def test_the_first_wrong_field_is_named_and_the_others_counted() -> None:
    error = _error(_SHAPE, {})
    assert error.error_count() == 3
    assert wrong_field(error) == "field 'seeds': Field required (+2 more)"
    error = _error(_SHAPE, {"seeds": [1], "task_name": None})
    assert error.error_count() == 2
    assert wrong_field(error) == "field 'task_name': Input should be a valid string (+1 more)"


# -- OutlivesReader -----------------------------------------------------------------------------------------------


class _Stream:
    """A stream that notes what it is given, and raises what it is told to from then on."""

    def __init__(self, counts: int | None = None) -> None:
        self.written: list[str] = []
        self.flushes = 0
        self.fails: BaseException | None = None
        self.counts = counts
        self.encoding = "latin-1"

    def write(self, text: str) -> Any:
        if self.fails is not None:
            raise self.fails
        self.written.append(text)
        return len(text) if self.counts is None else self.counts

    def flush(self) -> None:
        if self.fails is not None:
            raise self.fails
        self.flushes += 1


def test_a_reader_still_there_gets_everything_and_the_streams_own_count() -> None:
    stream = _Stream()
    reader = OutlivesReader(stream)
    assert reader.write("hello\n") == 6
    reader.flush()
    assert reader.write("") == 0
    assert stream.written == ["hello\n", ""] and stream.flushes == 1
    stream.counts = 2  # a stream that took part of it says so, and is believed
    assert reader.write("partly") == 2
    assert stream.written == ["hello\n", "", "partly"]


def test_anything_else_is_the_streams_own() -> None:
    stream = _Stream()
    reader = OutlivesReader(stream)
    assert reader.encoding == "latin-1"
    assert reader.written is stream.written
    with pytest.raises(AttributeError):
        reader.no_such_attribute  # noqa: B018 - the lookup is the test


def test_once_the_reader_is_gone_a_write_goes_nowhere_and_says_it_was_all_written() -> None:
    stream = _Stream()
    reader = OutlivesReader(stream)
    reader.write("first\n")
    stream.fails = BrokenPipeError(errno.EPIPE, "Broken pipe")
    assert reader.write("second\n") == 7  # no exception: the command carries on
    stream.fails = AssertionError("the stream is not used again once its reader is gone")
    assert reader.write("third, longer\n") == 14
    reader.flush()
    assert stream.written == ["first\n"] and stream.flushes == 0


def test_a_flush_that_finds_the_reader_gone_ends_the_writing_too() -> None:
    stream = _Stream()
    reader = OutlivesReader(stream)
    reader.flush()
    stream.fails = BrokenPipeError(errno.EPIPE, "Broken pipe")
    reader.flush()  # no exception
    stream.fails = AssertionError("the stream is not used again once its reader is gone")
    reader.flush()
    assert reader.write("after\n") == 6
    assert stream.written == [] and stream.flushes == 1


@pytest.mark.parametrize("error", [OSError(errno.EIO, "I/O error"), ValueError("I/O operation on closed file")])
def test_another_failure_of_the_stream_is_not_hidden(error: Exception) -> None:
    stream = _Stream()
    reader = OutlivesReader(stream)
    stream.fails = error
    with pytest.raises(type(error)):
        reader.write("x")
    with pytest.raises(type(error)):
        reader.flush()
    stream.fails = None
    assert reader.write("still there") == 11  # the reader is not taken for gone
    assert stream.written == ["still there"]


def _devnull() -> tuple[int, int]:
    status = os.stat(os.devnull)
    return status.st_dev, status.st_ino


def _is_devnull(fd: int) -> bool:
    status = os.fstat(fd)
    return (status.st_dev, status.st_ino) == _devnull()


def test_a_reader_gone_from_a_real_pipe_leaves_the_streams_descriptor_on_devnull() -> None:
    read_end, write_end = os.pipe()
    stream = io.TextIOWrapper(io.FileIO(write_end, "w"), encoding="utf-8", line_buffering=True)
    try:
        reader = OutlivesReader(stream)
        assert reader.write("read\n") == 5
        assert os.read(read_end, 100) == b"read\n"
        assert not _is_devnull(write_end)
        os.close(read_end)
        assert reader.write("unread\n") == 7  # Python ignores SIGPIPE: the write raised BrokenPipeError
        assert _is_devnull(write_end)
        assert reader.write("more\n") == 5
        reader.flush()
        stream.write("what the stream still buffers\n")
        stream.flush()  # goes to /dev/null: no BrokenPipeError at exit
        os.write(write_end, b"written to the descriptor")
    finally:
        stream.close()


class _NoDescriptor(_Stream):
    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    def fileno(self) -> int:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.EBADF, "Bad file descriptor"),
        io.UnsupportedOperation("fileno"),
        ValueError("I/O operation on closed file"),
        AttributeError("fileno"),
    ],
)
def test_a_stream_without_a_descriptor_whose_reader_is_gone_is_quiet_too(error: BaseException) -> None:
    stream = _NoDescriptor(error)
    reader = OutlivesReader(stream)
    stream.fails = BrokenPipeError(errno.EPIPE, "Broken pipe")
    assert reader.write("lost\n") == 5
    stream.fails = None
    assert reader.write("after\n") == 6
    assert stream.written == []


def test_a_stream_with_no_fileno_at_all_whose_reader_is_gone_is_quiet_too() -> None:
    stream = _Stream()
    reader = OutlivesReader(stream)
    stream.fails = BrokenPipeError(errno.EPIPE, "Broken pipe")
    reader.flush()
    stream.fails = None
    assert reader.write("after\n") == 6
    assert stream.written == [] and stream.flushes == 0


def test_a_stream_failing_otherwise_while_going_to_devnull_is_not_hidden() -> None:
    stream = _NoDescriptor(RuntimeError("a bug"))
    reader = OutlivesReader(stream)
    stream.fails = BrokenPipeError(errno.EPIPE, "Broken pipe")
    with pytest.raises(RuntimeError, match="a bug"):
        reader.write("lost\n")


# -- the seeds ----------------------------------------------------------------------------------------------------


def test_the_default_seeds_and_the_largest_seed() -> None:
    assert DEFAULT_SEEDS == (1, 2, 3)
    assert SEED_MAX == 9_223_372_036_854_775_807


@pytest.mark.parametrize(
    ("seed", "name", "value"),
    [
        (1, "transport", 13_950_510_662_342_563_850),
        (2, "transport", 13_806_828_058_329_721_728),
        (1, "swarm:x", 13_318_568_650_542_653_736),
        (0, "", 4_624_554_156_401_727_479),
        (-1, "a", 13_758_059_004_262_528_251),
        (SEED_MAX, "transport", 15_310_961_500_370_596_867),
        (7, "café", 7_515_381_703_690_236_519),
        (7, "cafe", 14_175_865_591_922_448_592),
    ],
)
def test_a_sub_seed_is_pinned_so_that_every_case_replays_byte_for_byte(seed: int, name: str, value: int) -> None:
    assert sub_seed(seed, name) == value
    assert type(sub_seed(seed, name)) is int


def test_a_sub_seed_is_the_first_8_bytes_of_blake2b_of_seed_colon_name_big_endian() -> None:
    digest = hashlib.blake2b(b"1:transport", digest_size=8).digest()
    assert digest.hex() == "c19a2b88d03a580a"
    assert sub_seed(1, "transport") == 0xC19A2B88D03A580A == int.from_bytes(digest, "big")
    values = {sub_seed(seed, name) for seed in range(200) for name in ("transport", "swarm:a", "swarm:b")}
    assert len(values) == 600 and all(0 <= v < 2**64 for v in values)
    assert max(values) >= 2**63  # all 64 bits are used


def test_rng_draws_from_the_named_sub_seed() -> None:
    draws = rng(1, "transport")
    assert isinstance(draws, random.Random)
    assert [draws.random(), draws.random()] == [0.3862863981227308, 0.0722960997459281]
    assert rng(1, "transport").randrange(1_000_000) == 405_050
    same = random.Random(sub_seed(2, "swarm:x"))
    again = rng(2, "swarm:x")
    assert [again.random() for _ in range(5)] == [same.random() for _ in range(5)]
    assert rng(1, "transport").random() != rng(2, "transport").random()
    assert rng(1, "transport").random() != rng(1, "swarm:x").random()


def test_two_generators_of_one_name_are_independent_objects() -> None:
    first, second = rng(3, "transport"), rng(3, "transport")
    assert first is not second
    first.random()
    assert second.random() == random.Random(sub_seed(3, "transport")).random()


# -- one_of: the fix for an unknown name ---------------------------------------------------------------------------


def test_a_name_close_to_a_known_one_is_asked_about_first() -> None:
    """A typo (one letter off, two swapped) gets the name it was likely meant to be, then the choices."""
    known = ["lost_response", "request_lost", "stale_claim"]
    assert one_of("lost_respons", known, "x") == (
        "did you mean lost_response? Else use one of lost_response, request_lost, stale_claim"
    )
    assert one_of("request_lsot", known, "x").startswith("did you mean request_lost? ")
    # Case is no typo's measure: the name is given as it is known.
    assert one_of("Lost_Respons", known, "x").startswith("did you mean lost_response? ")
    assert one_of("LOST_RESPONSE", ["lost_response", "Other_Name"], "x").startswith("did you mean lost_response? ")
    assert one_of("other_nam", ["lost_response", "Other_Name"], "x").startswith("did you mean Other_Name? ")


def test_a_name_close_to_none_gets_only_the_choices() -> None:
    assert one_of("nope", ["lost_response", "request_lost"], "x") == "use one of lost_response, request_lost"
    # 0.8 alike is close: "abcd" and "abcx" are 0.75 alike, "abcde" and "abcdx" 0.8.
    assert one_of("abcx", ["abcd"], "x") == "use one of abcd"
    assert one_of("abcdx", ["abcde"], "x") == "did you mean abcde? Else use one of abcde"
    assert one_of("a", [], "x") == "use one of (none)"


def test_a_dozen_names_are_listed_and_more_are_counted_with_where_to_see_them() -> None:
    twelve = [f"name{n:02}" for n in range(12)]
    assert one_of("zzz", twelve, "names elsewhere") == f"use one of {', '.join(twelve)}"
    assert one_of("zzz", [*twelve, "name12"], "names elsewhere") == "use one of the 13 names elsewhere"
    assert one_of("name1", [*twelve, "name12"], "names elsewhere").startswith("did you mean name1")
