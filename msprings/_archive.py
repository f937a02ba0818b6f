"""Reading ``.npz`` archives from outside without trusting them (model and trajectory files).

Every array's ``.npy`` header is read and checked against the zip directory before its data
is: a member whose declared size is impossible for its compressed size, whose header
claims more bytes than the member holds, or that holds Python objects (which only
unpickling could read) is refused with a ValueError naming the member, before anything of
its size is allocated.  Nothing is ever unpickled.
"""
from __future__ import annotations

import math
import os
import zipfile
import zlib
from typing import NamedTuple

import numpy as np
from numpy.lib import format as npy_format

__all__ = ["Archive", "face_bytes_limit"]

# Deflate cannot compress better than about 1032:1 (258 bytes per 2-bit code); a member
# that claims more is lying about its size.
_DEFLATE_RATIO_LIMIT = 1100
# No array of a model or trajectory file may exceed this (bytes): far beyond any system
# that fits in memory, far below what would exhaust it by itself.
_MEMBER_BYTES_LIMIT = 1 << 34

# What reading a damaged member can raise: zip structure and checksum errors, truncation,
# bad .npy headers, unsupported compression methods and encryption.
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError, RuntimeError)


class _Header(NamedTuple):
    shape: tuple[int, ...]
    fortran_order: bool
    dtype: np.dtype
    offset: int  # bytes of the member before the data


class Archive:
    """The members of an ``.npz`` archive, read one at a time after their headers are checked.

    ``what`` names the kind of file in messages ("msprings model file"); errors read
    "<path> is a damaged <what>: <member>: <why>".
    """

    def __init__(self, path: str | os.PathLike[str], what: str) -> None:
        self.name, self.what = str(path), what
        self._stream = open(path, "rb")  # a missing file is the caller's FileNotFoundError
        try:
            self._zip = zipfile.ZipFile(self._stream)
            infos = self._zip.infolist()
        except _READ_ERRORS as error:
            self._stream.close()
            raise ValueError(f"{self.name} is not an {what} (not an .npz archive: {error})") from None
        self._infos = {info.filename[:-4]: info for info in infos if info.filename.endswith(".npy")}
        self.files = tuple(self._infos)
        self._headers: dict[str, _Header] = {}

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self._zip.close()
        self._stream.close()

    def __contains__(self, key: str) -> bool:
        return key in self._infos

    def damaged(self, key: str, detail: str) -> ValueError:
        """The error for a member that cannot be used."""
        return ValueError(f"{self.name} is a damaged {self.what}: {key}: {detail}")

    def header(self, key: str) -> _Header:
        """Shape, order and dtype of a member, from its header alone (its data is not read)."""
        if key in self._headers:
            return self._headers[key]
        info = self._infos.get(key)
        if info is None:
            raise ValueError(f"{self.name} is a damaged {self.what}: the entry {key!r} is missing")
        if info.compress_type == zipfile.ZIP_STORED:
            impossible = info.file_size != info.compress_size
        else:
            impossible = info.file_size > _DEFLATE_RATIO_LIMIT * info.compress_size + 1024
        if impossible:
            raise self.damaged(key, f"the archive claims {info.file_size} bytes from {info.compress_size} "
                                    "compressed bytes, which no compression gives")
        try:
            with self._zip.open(info) as member:
                version = npy_format.read_magic(member)
                if version == (1, 0):
                    shape, fortran_order, dtype = npy_format.read_array_header_1_0(member)
                elif version == (2, 0):
                    shape, fortran_order, dtype = npy_format.read_array_header_2_0(member)
                else:
                    raise ValueError(f".npy format version {version} is not supported")
                offset = member.tell()
        except _READ_ERRORS as error:
            raise self.damaged(key, f"unreadable array header ({error})") from None
        if dtype.hasobject:
            raise self.damaged(key, "it holds Python objects, which would have to be unpickled")
        count = math.prod(shape)
        if count * dtype.itemsize != info.file_size - offset or count * dtype.itemsize > _MEMBER_BYTES_LIMIT:
            raise self.damaged(key, f"its header claims shape {shape} of {dtype} ({count * dtype.itemsize} bytes) "
                                    f"but the member holds {info.file_size - offset} bytes of data")
        header = self._headers[key] = _Header(tuple(shape), bool(fortran_order), dtype, offset)
        return header

    def rows(self, key: str) -> int:
        """The length of a member's first axis, from its header (0 for a scalar)."""
        shape = self.header(key).shape
        return shape[0] if shape else 0

    def check(self, key: str, kinds: str, shape: tuple[int | None, ...] | None = None,
              max_bytes: int | None = None) -> _Header:
        """The header of member ``key`` after checking, on the header alone, that its dtype is
        one of ``kinds`` (NumPy kind letters), that its shape is ``shape`` if given (None: any
        length on that axis) and that its data is at most ``max_bytes`` if given."""
        header = self.header(key)
        if header.dtype.kind not in kinds:
            raise self.damaged(key, f"dtype {header.dtype} is not one of the expected kinds ({_kind_names(kinds)})")
        if shape is not None and (
            len(shape) != len(header.shape)
            or any(want is not None and want != got for want, got in zip(shape, header.shape))
        ):
            wanted = ", ".join("n" if want is None else str(want) for want in shape)
            wanted = f"({wanted},)" if len(shape) == 1 else f"({wanted})"
            raise ValueError(f"{self.name} is a damaged {self.what}: {key} has shape {header.shape}, "
                             f"expected {wanted}")
        size = math.prod(header.shape) * header.dtype.itemsize
        if max_bytes is not None and size > max_bytes:
            raise self.damaged(key, f"it holds {size} bytes, more than the {max_bytes} such an entry can need")
        return header

    def agree(self, what: str, axes: dict[str, int]) -> int:
        """The length that the members ``axes`` (member: axis) share on the given axes, from
        their headers alone; a member that disagrees with the others is named in a ValueError.

        A member missing from the archive, or with too few dimensions, is left to
        :meth:`check` to refuse."""
        lengths: dict[str, int] = {}
        for key, axis in axes.items():
            if key in self and len(self.header(key).shape) > axis:
                lengths[key] = self.header(key).shape[axis]
        if not lengths:
            return 0
        counts = [length for length in lengths.values()]
        common = max(counts, key=lambda length: (counts.count(length), -length))
        for key, length in lengths.items():
            if length != common:
                others = ", ".join(other for other, value in lengths.items() if value == common)
                raise ValueError(f"{self.name} is a damaged {self.what}: {key} has shape {self.header(key).shape} "
                                 f"({length} {what}), but {others} give {common}")
        return common

    def read(self, key: str, kinds: str, shape: tuple[int | None, ...] | None = None,
             max_bytes: int | None = None) -> np.ndarray:
        """The member ``key``, after :meth:`check` (dtype, shape and size checked on the
        header, before any data is read)."""
        header = self.check(key, kinds, shape, max_bytes)
        data = bytearray(math.prod(header.shape) * header.dtype.itemsize)
        try:
            with self._zip.open(self._infos[key]) as member:
                member.read(header.offset)
                view, filled = memoryview(data), 0
                while filled < len(data):
                    got = member.readinto(view[filled:])
                    if not got:
                        raise EOFError("the member ends early")
                    filled += got
                if member.read(1):  # reading to the end also checks the CRC
                    raise ValueError("the member holds more data than its header says")
        except _READ_ERRORS as error:
            raise self.damaged(key, f"unreadable data ({error})") from None
        array = np.frombuffer(data, dtype=header.dtype)
        return array.reshape(header.shape, order="F" if header.fortran_order else "C")


def face_bytes_limit(nodes: int, itemsize: int = 8) -> int:
    """The most bytes a faces entry (F, 3) over ``nodes`` nodes can need: a face joins three
    different nodes, and there are n (n - 1) (n - 2) / 3 distinct triangles with their two
    orientations.  A member claiming more faces than that (a few kilobytes that inflate to
    megabytes) is refused from its header."""
    return nodes * (nodes - 1) * (nodes - 2) // 3 * 3 * itemsize


def _kind_names(kinds: str) -> str:
    names = {"b": "bool", "i": "signed integer", "u": "unsigned integer", "f": "real float", "U": "str"}
    return ", ".join(names.get(kind, kind) for kind in kinds)

