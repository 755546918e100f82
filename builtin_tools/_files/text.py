"""Text files as the editing tools see them: decoded once, written back the same way.

A file is loaded together with everything needed to write it back unchanged outside an
edit: its encoding (BOM included), its line-ending style and its permission bits. Files
that are not valid UTF-8 are decoded losslessly, so bytes the model never touched come
back byte for byte.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loom_engine.tools.base import ToolError
from loom_engine.tools.io import IOBackendError

from . import limits
from .access import LOCAL_FILES, BlockingFiles

# Enough to classify a file without reading all of it.
SNIFF_BYTES = 8192
# Above this, read_file streams instead of loading the whole file.
LARGE_FILE_BYTES = 32 * 1024 * 1024
LINE_NUMBER_WIDTH = 6


class TextFileError(ToolError):
    """A file could not be read or written as text; the message says what to do."""


class BinaryFileError(TextFileError):
    pass


@dataclass(frozen=True)
class TextEncoding:
    """How a file's bytes become text and back."""

    codec: str
    bom: bytes = b""
    # "surrogateescape" keeps stray bytes of an otherwise UTF-8 file as lone surrogates.
    errors: str = "strict"

    @property
    def label(self) -> str:
        names = {"utf-8": "UTF-8", "utf-16-le": "UTF-16 LE", "utf-16-be": "UTF-16 BE",
                 "utf-32-le": "UTF-32 LE", "utf-32-be": "UTF-32 BE", "cp1252": "Windows-1252",
                 "latin-1": "Latin-1"}
        name = names.get(self.codec, self.codec)
        if self.bom:
            name += " with BOM"
        if self.errors == "surrogateescape":
            name += " (with some invalid bytes)"
        return name

    def decode(self, data: bytes) -> str:
        return data[len(self.bom):].decode(self.codec, self.errors)

    def encode(self, text: str) -> bytes:
        try:
            return self.bom + text.encode(self.codec, self.errors)
        except UnicodeEncodeError as error:
            bad = error.object[error.start:error.end]
            line = error.object.count("\n", 0, error.start) + 1
            raise TextFileError(
                f"The file is encoded as {self.label}, which cannot represent {bad!r} (line {line} of the "
                "new text). Use only characters that encoding supports (for example an escape "
                "sequence or plain ASCII) and call again.") from None


UTF8 = TextEncoding("utf-8")

_BOMS: tuple[tuple[bytes, str], ...] = (
    # UTF-32 first: its little-endian BOM starts with UTF-16's.
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)

# Magic numbers worth naming when a binary file is refused.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF", "PDF document"),
    (b"PK\x03\x04", "zip archive"),
    (b"\x1f\x8b", "gzip archive"),
    (b"\x7fELF", "ELF executable"),
    (b"SQLite format 3\x00", "SQLite database"),
)
_SURROGATE = re.compile("[\ud800-\udfff]")
# surrogateescape turns each undecodable byte into one of these.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_NON_ASCII = re.compile("[^\x00-\x7f]")
# Control bytes that do not occur in text (tab, LF, VT, FF, CR and ESC do).
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13, 27)) + b"\x7f"


def bom_encoding(data: bytes) -> TextEncoding | None:
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return TextEncoding(codec, bom)
    return None


def binary_kind(data: bytes) -> str | None:
    """``None`` for text, else a short description of what the bytes look like."""
    sample = data[:SNIFF_BYTES]
    if bom_encoding(sample) is not None:
        return None
    for magic, kind in _MAGIC:
        if sample.startswith(magic):
            return kind
    if b"\x00" in sample:
        return "binary file"
    if sample and len(sample.translate(None, _CONTROL)) < len(sample) * 0.9:
        return "binary file"
    return None


def detect_encoding(data: bytes) -> TextEncoding:
    """The encoding to read ``data`` with, chosen so that decode/encode round-trips exactly."""
    by_bom = bom_encoding(data)
    if by_bom is not None:
        try:
            by_bom.decode(data)
            return by_bom
        except UnicodeDecodeError:
            # A BOM followed by garbage: keep the bytes intact rather than fail.
            return TextEncoding("latin-1")
    try:
        data.decode("utf-8")
        return UTF8
    except UnicodeDecodeError:
        pass
    # Valid multi-byte sequences mean UTF-8 with a few stray bytes; keep those as-is.
    stray, multibyte = escape_counts(data.decode("utf-8", "surrogateescape"))
    return not_utf8(stray, multibyte, cp1252_decodes=not any(b in data for b in CP1252_UNDEFINED))


# The only bytes Python's cp1252 codec cannot decode.
CP1252_UNDEFINED = b"\x81\x8d\x8f\x90\x9d"


def escape_counts(escaped: str) -> tuple[int, int]:
    """Stray bytes and well-formed multi-byte characters in text decoded with surrogateescape."""
    stray = len(_ESCAPED_BYTE.findall(escaped))
    return stray, len(_NON_ASCII.findall(escaped)) - stray


def not_utf8(stray: int, multibyte: int, *, cp1252_decodes: bool) -> TextEncoding:
    """The encoding of bytes that are not valid UTF-8, from what decoding them found."""
    if multibyte > stray:
        return TextEncoding("utf-8", errors="surrogateescape")
    return TextEncoding("cp1252") if cp1252_decodes else TextEncoding("latin-1")


def for_display(text: str) -> str:
    """Text safe to send to a model: stray bytes kept by surrogateescape become U+FFFD."""
    if _SURROGATE.search(text):
        return _SURROGATE.sub("\ufffd", text)
    return text


def detect_newline(text: str) -> str:
    """The file's line-ending style, judged by its first line ending."""
    first = text.find("\n")
    if first > 0 and text[first - 1] == "\r":
        return "\r\n"
    return "\n"


def normalize_newlines(text: str) -> str:
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def split_lines(text: str) -> list[str]:
    """Lines with their own endings kept; ``\\r\\n``, ``\\r`` and ``\\n`` all end a line."""
    if "\r" not in text:
        return text.splitlines(keepends=True) if _only_lf_breaks(text) else _LINE.findall(text)
    return _LINE.findall(text)


def _only_lf_breaks(text: str) -> bool:
    # str.splitlines also breaks on \v, \f, \x1c-\x1e, \x85, \u2028 and \u2029.
    return not any(ch in text for ch in "\v\f\x1c\x1d\x1e\x85\u2028\u2029")


def line_ending(line: str) -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    if line.endswith(("\n", "\r")):
        return line[-1]
    return ""


def strip_ending(line: str) -> str:
    return line[: len(line) - len(line_ending(line))]


def lines_phrase(count: int) -> str:
    return f"{count} line{'' if count == 1 else 's'}"


def count_lines(text: str) -> int:
    normalized = normalize_newlines(text)
    return normalized.count("\n") + (1 if normalized and not normalized.endswith("\n") else 0)


@dataclass(frozen=True)
class TextFile:
    """A decoded text file; ``text`` keeps the original line endings."""

    path: Path
    text: str
    encoding: TextEncoding
    newline: str
    mode: int | None

    @property
    def ends_with_newline(self) -> bool:
        return self.text.endswith(("\n", "\r"))

    def encode(self, text: str) -> bytes:
        return self.encoding.encode(text)


def regular_file_stat(path: Path, shown: str) -> os.stat_result:
    """Stat ``path`` and insist on a regular file, with an error the model can act on."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise TextFileError(missing_file_message(path, shown)) from None
    except PermissionError:
        raise TextFileError(f"Cannot access {shown}: permission denied.") from None
    except OSError as error:
        raise TextFileError(f"Cannot access {shown}: {error.strerror or error}.") from None
    if stat.S_ISDIR(st.st_mode):
        raise TextFileError(f"{shown} is a directory, not a file. Use ls to list it, or glob to find files in it.")
    if not stat.S_ISREG(st.st_mode):
        # FIFOs and devices would block or never end.
        raise TextFileError(f"{shown} is not a regular file (a device, socket or pipe); it cannot be read as text.")
    return st


def missing_file_message(path: Path, shown: str) -> str:
    message = f"File not found: {shown}."
    folder = path.parent
    if not folder.is_dir():
        return message + f" Its folder {folder} does not exist either; check the path (glob can find files)."
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except OSError:
        return message
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    if not close:
        lowered = {name.lower(): name for name in names}
        if path.name.lower() in lowered:
            close = [lowered[path.name.lower()]]
    if close:
        message += " Did you mean: " + ", ".join(str(folder / name) for name in close) + "?"
    return message


def load_text(path: Path, shown: str, files: BlockingFiles = LOCAL_FILES) -> TextFile:
    """Read ``path`` as text for editing; refuses directories, special, binary and huge files.

    Loom's own backend opens the file without following any symlink (the path was
    resolved when it was checked), so what is read is the file that was checked; an
    editor's gives its buffer of the file, which must exist on disk as a regular file.
    """
    checked = regular_file_stat(path, shown)
    try:
        opened = files.open_read(path, shown)
    except FileNotFoundError:
        raise TextFileError(missing_file_message(path, shown)) from None
    except PermissionError:
        raise TextFileError(f"Cannot read {shown}: permission denied.") from None
    except OSError as error:
        raise TextFileError(f"Cannot read {shown}: {error.strerror or error}.") from None
    except IOBackendError as error:
        raise TextFileError(f"Cannot read {shown}: {error}") from None
    st_mode = opened.st_mode if opened.st_mode is not None else checked.st_mode
    with opened.handle as handle:
        if not stat.S_ISREG(st_mode):
            raise TextFileError(f"{shown} is not a regular file; it cannot be edited as text.")
        if opened.size > limits.EDIT_LIMIT_BYTES:
            raise TextFileError(too_big_to_edit(shown, opened.size))
        try:
            data = handle.read(limits.EDIT_LIMIT_BYTES + 1)
        except OSError as error:
            raise TextFileError(f"Cannot read {shown}: {error.strerror or error}.") from None
    if len(data) > limits.EDIT_LIMIT_BYTES:  # it grew since the stat
        raise TextFileError(too_big_to_edit(shown, len(data)))
    kind = binary_kind(data)
    if kind is not None:
        raise BinaryFileError(
            f"{shown} is a {kind} ({len(data):,} bytes), not text; these tools only handle text files.")
    encoding = detect_encoding(data)
    text = encoding.decode(data)
    return TextFile(path, text, encoding, detect_newline(text), stat.S_IMODE(st_mode))


def too_big_to_edit(shown: str, size: int) -> str:
    return (f"{shown} is {size / 2**20:.1f} MB, over the {limits.EDIT_LIMIT_BYTES / 2**20:g} MB edit limit: "
            "change it with bash (sed -i, or split it into smaller files); read_file with offset and "
            "limit still shows any part of it.")


def unread_overwrite_message(shown: str) -> str:
    return (f"{shown} already exists and has not been read in this session. Call read_file on it first so "
            "nothing in it is lost by accident, then write again (for a partial change, edit_file is "
            "safer).")


def atomic_write(path: Path, data: bytes, mode: int | None = None, shown: str | None = None,
                 files: BlockingFiles = LOCAL_FILES) -> None:
    """Replace ``path`` with ``data`` in one rename, so readers never see half a file.

    ``mode`` keeps an existing file's permission bits. No symlink is followed on the way:
    a folder of ``path`` that became a symlink since it was resolved stops the write.
    An editor's backend writes the text to its buffer of the file instead (a failure
    there is an OSError naming the editor's cause).
    """
    try:
        files.write(path, data, mode, shown or str(path))
    except IOBackendError as error:
        raise OSError(f"the editor refused it: {error}") from None


def write_error(shown: str, error: OSError) -> TextFileError:
    reason = "permission denied" if isinstance(error, PermissionError) else (error.strerror or str(error))
    return TextFileError(f"Could not write {shown}: {reason}.")


def numbered(lines: Sequence[str], first: int) -> str:
    """``cat -n`` style: right-aligned line number, a tab, the line (without its ending)."""
    return "\n".join(f"{n:>{LINE_NUMBER_WIDTH}}\t{for_display(strip_ending(line))}"
                     for n, line in enumerate(lines, start=first))
