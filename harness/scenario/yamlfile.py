"""Reading a scenario file's YAML within bounds: its size, nesting depth and number of values are capped (and the
text its aliases unfold to), and a key given twice in one mapping is refused.

Scenario files may be written by others, so reading one must neither run out of stack or memory nor silently
keep only one of two values. The bounds are checked while the YAML is composed (node by node, before anything
is built from it), never by recursing over what was built; an alias counts as the whole value it repeats, so
anchors cannot multiply a small file into a huge or deep one.

libyaml's parser gives the events when PyYAML has it (as PyPI's wheels do): about three times faster over the
shipped files, and closer to the YAML spec than PyYAML's own (a tab after a value is white space, as YAML says,
where PyYAML refuses it). libyaml decides what is YAML; a file it refuses is read again with PyYAML's parser, whose
message, when it refuses the file too, quotes the line and names the character.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from harness.limits import FILE_SIZE_MAX_BYTES, NESTING_DEPTH_MAX, VALUE_COUNT_MAX

__all__ = [
    "FILE_SIZE_MAX_BYTES",
    "NESTING_DEPTH_MAX",
    "VALUE_COUNT_MAX",
    "Refused",
    "read_bounded",
    "shown",
]


_MERGE_TAG = "tag:yaml.org,2002:merge"


class Refused(Exception):
    """The file breaks one of the bounds above, repeats a key, or is not a regular file; the message says what and
    the fix, in one line (without the file's name)."""


def shown(text: object, limit: int = 80) -> str:
    """``text`` as one printable line of at most ``limit`` characters: control characters and line breaks are
    escaped (so a message quoting a user's text stays one line) and a longer text is cut, marked by ``...``."""
    escaped = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in str(text)[: limit + 1])
    return escaped if len(escaped) <= limit else escaped[: limit - 3] + "..."


def _line(node_or_event: Any) -> int:
    return int(node_or_event.start_mark.line) + 1


class _Bounds(Composer, SafeConstructor, Resolver):
    """PyYAML's safe composer and constructor, with the bounds checked as each node is composed and duplicate
    keys refused; the parser that gives it events comes from the loader classes below."""

    #: The parser's (declared only: a parser class later in the method order gives it).
    peek_event: Callable[[], Any]

    def _start_bounds(self) -> None:
        #: Nesting depth of the node being composed (0: outside the document).
        self._depth = 0
        #: The deepest (effective) depth reached in the subtree being composed.
        self._reach = 0
        #: Values composed so far, and the characters of their scalars, aliases counted as what they repeat.
        self._count = 0
        self._chars = 0
        #: For each finished anchored node: how much deeper than itself it reaches, how many values it holds, and
        #: how many characters its scalars hold.
        self._measured: dict[str, tuple[int, int, int]] = {}
        #: The key each mapping's value nodes stand under, by node: named when a value cannot be built.
        self._keys: dict[int, str] = {}

    def _check(self, depth: int, event: Any) -> None:
        if depth > NESTING_DEPTH_MAX:
            raise Refused(
                f"nested deeper than {NESTING_DEPTH_MAX} lists or mappings at line {_line(event)}; "
                "fix: flatten it (a scenario needs at most 5 levels)"
            )
        if self._count > VALUE_COUNT_MAX:
            raise Refused(
                f"more than {VALUE_COUNT_MAX:,} values (aliases counted as what they repeat) by line {_line(event)}; "
                "fix: shorten the file"
            )
        if self._chars > FILE_SIZE_MAX_BYTES:
            raise Refused(
                f"its aliases unfold to more than {FILE_SIZE_MAX_BYTES:,} characters of text by line {_line(event)}; "
                "fix: write the values out, or shorten them"
            )

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        depth = self._depth + 1
        event: Any = self.peek_event()
        if isinstance(event, yaml.AliasEvent) and event.anchor is not None:
            measured = self._measured.get(event.anchor)
            if measured is None and event.anchor in self.anchors:
                raise Refused(
                    f"alias '*{shown(event.anchor, 40)}' at line {_line(event)} repeats a value that contains it; "
                    "fix: write the value out instead of the alias"
                )
            if measured is not None:  # an undefined alias is PyYAML's own error
                height, count, chars = measured
                self._count += count
                self._chars += chars
                self._reach = max(self._reach, depth + height)
                self._check(depth + height, event)
            return super().compose_node(parent, index)
        self._count += 1
        self._check(depth, event)
        outer_reach, count_before, chars_before = self._reach, self._count, self._chars
        self._depth, self._reach = depth, depth
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth = depth - 1
        if isinstance(node, ScalarNode):
            self._chars += len(node.value)
            self._check(depth, event)
        if event.anchor is not None:
            self._measured[event.anchor] = (
                self._reach - depth,
                self._count - count_before + 1,
                self._chars - chars_before,
            )
        self._reach = max(outer_reach, self._reach)
        return node

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        """The mapping, refusing a key written twice (PyYAML would keep the last silently); a key a merge
        (``<<: *anchor``) brings in may still be overridden, as YAML intends."""
        if isinstance(node, MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node)
                try:
                    seen = first_line.get(key)
                except TypeError:  # unhashable: PyYAML's own error below names it
                    continue
                if seen is not None:
                    raise Refused(
                        f"key '{shown(key_node.value, 60)}' given twice (lines {seen} and {_line(key_node)}); "
                        "fix: keep one of them"
                    )
                first_line[key] = _line(key_node)
            for key_node, value_node in node.value:
                if isinstance(key_node, ScalarNode):
                    self._keys[id(value_node)] = key_node.value
        return super().construct_mapping(node, deep=deep)

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        """The value of ``node``; a scalar PyYAML cannot build (a date like ``2024-13-45``, ``!!int x``) is refused
        in one line naming its key and line, instead of PyYAML's bare error."""
        if not isinstance(node, ScalarNode):
            return super().construct_object(node, deep=deep)
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, AttributeError, OverflowError) as exc:
            key = self._keys.get(id(node))
            field = f"field '{shown(key, 60)}' " if key is not None else ""
            raise Refused(
                f"{field}at line {_line(node)}: '{shown(node.value, 40)}' is a value YAML cannot build "
                f"({shown(exc, 100)}); fix: quote it to make it text, or correct it"
            ) from exc


class _BoundedLoader(Reader, Scanner, Parser, _Bounds):
    """The bounds over PyYAML's pure-Python parser: slower, and its errors quote the offending line."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._start_bounds()


def _fast_loader() -> Callable[[str], _Bounds] | None:
    try:
        from yaml._yaml import CParser
    except ImportError:  # PyYAML built without libyaml: the pure-Python parser alone
        return None

    class _FastBoundedLoader(_Bounds, CParser):
        """The same bounds over libyaml's parser, which scans and parses several times faster (the composer
        stays PyYAML's, so every node still passes the checks above)."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._start_bounds()

    return _FastBoundedLoader


_FAST = _fast_loader()


def _load(loader_class: Callable[[str], _Bounds], text: str) -> object:
    loader: Any = loader_class(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_bounded(path: Path) -> object:
    """The YAML document in ``path``, built with PyYAML's safe constructor within the bounds above, from libyaml's
    parser when PyYAML has it (see the module's docstring).

    Raises ``Refused`` (too big, too deep, too many values, a repeated key, a scalar PyYAML cannot build such as
    ``2024-13-45`` or ``!!int x``, not a regular file), ``OSError`` (cannot be read; ``IsADirectoryError`` for a
    folder), ``UnicodeDecodeError``, ``yaml.YAMLError``, or ``ValueError``, ``TypeError``, ``AttributeError``
    and ``OverflowError`` for anything else PyYAML cannot build.
    """
    mode = path.stat().st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{path} is a folder")
    if not stat.S_ISREG(mode):  # a pipe or a device could block, or never end
        raise Refused("not a regular file (a pipe, socket or device); fix: give a scenario file")
    with path.open("rb") as stream:  # read at most one byte past the cap: never the whole of a huge file
        data = stream.read(FILE_SIZE_MAX_BYTES + 1)
    if len(data) > FILE_SIZE_MAX_BYTES:
        raise Refused(f"larger than {FILE_SIZE_MAX_BYTES:,} bytes; fix: shorten it (a scenario is a few kilobytes)")
    text = data.decode("utf-8")
    if _FAST is None:
        return _load(_BoundedLoader, text)
    try:
        return _load(_FAST, text)
    except Refused:
        raise  # the bounds are the same whichever parser gave the events
    except Exception as refusal:
        # libyaml decides what is YAML, but its messages neither quote the line nor always name the character at
        # fault: PyYAML's parser reads the file again to word the refusal, when it refuses the file too.
        _load(_BoundedLoader, text)  # raises PyYAML's refusal, when it refuses the file too
        raise refusal from None  # what PyYAML would accept (a byte-order mark inside the text, say) stays refused
