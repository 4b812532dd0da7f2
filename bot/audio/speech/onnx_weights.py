"""The float tensors stored in an ONNX file, read straight from its protobuf.

Only what :mod:`bot.audio.speech.silero_kernel` needs: the graph's float32 initializers. The
``onnx`` package would pull in a second protobuf stack for a dozen tensors; the wire format is
small and stable (``ModelProto.graph`` = 7, ``GraphProto.initializer`` = 5, ``TensorProto`` dims =
1, data_type = 2, float_data = 4, name = 8, raw_data = 9).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from campaigns.basics import GlyphoxaError

__all__ = ["float_initializers"]

_GRAPH, _INITIALIZER = 7, 5
_DIMS, _DATA_TYPE, _FLOAT_DATA, _NAME, _RAW_DATA = 1, 2, 4, 8, 9
_FLOAT = 1


def _varint(buf: memoryview, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def _fields(buf: memoryview) -> Iterator[tuple[int, int, int | memoryview]]:
    """(field number, wire type, value) of one protobuf message."""
    i, end = 0, len(buf)
    while i < end:
        key, i = _varint(buf, i)
        wire = key & 7
        if wire == 0:
            number, i = _varint(buf, i)
            yield key >> 3, wire, number
            continue
        if wire == 2:
            size, i = _varint(buf, i)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
        else:
            raise ValueError(f"protobuf wire type {wire}: not an ONNX model")
        if i + size > end:
            raise ValueError("a field runs past the end: the file is truncated")
        yield key >> 3, wire, buf[i : i + size]
        i += size


def _tensor(message: memoryview) -> tuple[str, np.ndarray] | None:
    dims: list[int] = []
    name, data_type, data = "", 0, b""
    for field, _wire, value in _fields(message):
        if field == _DIMS and isinstance(value, int):
            dims.append(value)
        elif field == _DIMS and isinstance(value, memoryview):  # packed
            i = 0
            while i < len(value):
                dim, i = _varint(value, i)
                dims.append(dim)
        elif field == _DATA_TYPE and isinstance(value, int):
            data_type = value
        elif field == _NAME and isinstance(value, memoryview):
            name = bytes(value).decode()
        elif field in (_RAW_DATA, _FLOAT_DATA) and isinstance(value, memoryview):
            data = bytes(value)
    if data_type != _FLOAT:
        return None
    array = np.frombuffer(data, dtype="<f4").astype(np.float32)
    return name, array.reshape(dims)


def float_initializers(path: str | Path) -> dict[str, np.ndarray]:
    """Every float32 initializer of the ONNX model at ``path``, by name."""
    try:
        model = memoryview(Path(path).read_bytes())
        graph = next(v for f, w, v in _fields(model) if f == _GRAPH and w == 2)
        if not isinstance(graph, memoryview):
            raise ValueError("the model has no graph")
        tensors = [
            _tensor(value)
            for field, wire, value in _fields(graph)
            if field == _INITIALIZER and isinstance(value, memoryview)
        ]
    except (OSError, ValueError, IndexError, StopIteration, UnicodeDecodeError) as exc:
        raise GlyphoxaError(f"cannot read the ONNX weights in {path}: {exc}") from exc
    return dict(t for t in tensors if t is not None)
