"""A document state as bytes: a small versioned header, then little-endian floats.

Layout (format version 1):

    header  19 bytes  struct "<4sBBBbHBII":
            magic b"CQST", format version, mode code, dtype code, scale exponent e,
            k, length of the model id, n, CRC-32 of all the other bytes (header included)
    model id          UTF-8, at most 255 bytes
    mentions          the mentions mode only: M (uint32), then M (entity, position) int32 pairs
    last_hidden       k values
    memory            linear/gated: the upper triangle of C, row by row, k(k+1)/2 values
                      softmax: H row-major, n·k values;  mentions: K row-major, M·k values;
                      none: nothing

Values are float32 or float16. C is an un-normalised sum, so its entries grow with n and
would overflow float16 (max 65504) on long documents: memory is stored divided by 2**e, a
power of two chosen per state, which costs no precision. float32 always uses e = 0.
Decoding returns float32 tensors and raises StateCodecError rather than wrong numbers.
"""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
import torch

from encoder.model.modes import MEMORY, MODES, Mode, memory_shape
from encoder.model.state import DocumentState
from store.errors import StateCodecError

Dtype = Literal["float32", "float16"]
DTYPES: tuple[Dtype, ...] = ("float32", "float16")

FORMAT_VERSION = 1
MAGIC = b"CQST"
_HEADER = struct.Struct("<4sBBBbHBII")
HEADER_BYTES = _HEADER.size
_CRC_OFFSET = HEADER_BYTES - 4
_NUMPY_DTYPE: dict[Dtype, np.dtype] = {"float32": np.dtype("<f4"), "float16": np.dtype("<f2")}
# Keeps float16 memory below this magnitude after scaling, leaving headroom under 65504.
_FLOAT16_TARGET_MAX = 2.0**14
# Relative asymmetry beyond rounding noise means the matrix is not a C at all.
_SYMMETRY_TOLERANCE = 1e-3


@dataclass(frozen=True)
class DecodedState:
    state: DocumentState
    model_id: str
    dtype: Dtype


@lru_cache(maxsize=8)
def _triangle_maps(k: int) -> tuple[np.ndarray, np.ndarray]:
    """(where each packed value sits in the flat k×k matrix, (k(k+1)/2,); which packed value
    fills each cell of the flat matrix, (k²,)): one gather each way, not two scatters."""
    rows, cols = np.triu_indices(k)
    cell = np.empty((k, k), dtype=np.intp)
    cell[rows, cols] = cell[cols, rows] = np.arange(len(rows))
    return rows * k + cols, cell.reshape(-1)


# The codec works in numpy: on small arrays torch's per-op overhead (and its thread pool on a
# busy machine) costs milliseconds where numpy costs microseconds.
def _pack_upper(matrix: np.ndarray) -> np.ndarray:
    return matrix.reshape(-1).take(_triangle_maps(matrix.shape[0])[0])


def _unpack_upper(packed: np.ndarray, k: int) -> np.ndarray:
    # 12 us for k = 100 where the two fancy-index scatters took 58 (measured).
    return packed.take(_triangle_maps(k)[1]).reshape(k, k)


def payload_values(mode: Mode, k: int, n: int, mentions: int = 0) -> int:
    """How many floats follow the model id (and the mentions), last_hidden included (C: its
    packed triangle)."""
    kept = MEMORY[mode]
    if kept == "C":
        return k + k * (k + 1) // 2
    if kept == "H":
        return k + n * k
    if kept == "K":
        return k + mentions * k
    return k


_MENTION_COUNT = struct.Struct("<I")
_MENTION_DTYPE = np.dtype("<i4")


def _mention_bytes(state: DocumentState) -> bytes:
    """The mentions block of a mentions-mode state (empty for the other modes)."""
    if MEMORY[state.mode] != "K":
        if state.mentions is not None:
            raise StateCodecError(f"mode {state.mode!r} keeps no mentions")
        return b""
    if state.mentions is None or state.mentions.dim() != 2 or state.mentions.shape[1] != 2:
        raise StateCodecError("the mentions mode needs mentions of shape (M, 2)")
    pairs = state.mentions.detach().to("cpu", torch.int64).numpy()
    if len(pairs) and (pairs.min() < 0 or pairs[:, 1].max() >= max(state.n, 1)):
        raise StateCodecError("mentions hold a negative entity or a position beyond n")
    return _MENTION_COUNT.pack(len(pairs)) + pairs.astype(_MENTION_DTYPE).tobytes()


def _as_float32(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().to("cpu", torch.float32).numpy()


def _memory_values(state: DocumentState) -> np.ndarray:
    """The memory as the flat float32 vector that is stored, after checking its shape."""
    m = 0 if state.mentions is None else int(state.mentions.shape[0])
    kept, shape = MEMORY[state.mode], memory_shape(state.mode, state.k, state.n, m)
    if shape is None:
        if state.memory is not None:
            raise StateCodecError(f"mode {state.mode!r} keeps no memory")
        return np.zeros(0, dtype=np.float32)
    if state.memory is None:
        raise StateCodecError(f"mode {state.mode!r} needs a memory tensor")
    memory = _as_float32(state.memory)
    if memory.shape != shape:
        raise StateCodecError(f"{state.mode} {kept} must be {shape}, got {memory.shape}")
    if kept in ("H", "K"):
        return memory.reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf are refused just after
        scale = float(np.abs(memory).max())
        if float(np.abs(memory - memory.T).max()) > _SYMMETRY_TOLERANCE * max(scale, 1.0):
            raise StateCodecError(f"{state.mode} C is not symmetric")
        # Averaging removes the last-bit asymmetry of a matmul: the triangle is the closest C.
        return _pack_upper((memory + memory.T) / np.float32(2))


def _scale_exponent(memory: np.ndarray, dtype: Dtype) -> int:
    if dtype == "float32" or memory.size == 0:
        return 0
    largest = float(np.abs(memory).max())
    if largest <= _FLOAT16_TARGET_MAX:
        return 0
    return math.ceil(math.log2(largest / _FLOAT16_TARGET_MAX))


def encode_state(state: DocumentState, *, model_id: str, dtype: Dtype) -> bytes:
    """The bytes of one state; raises StateCodecError for a malformed state or model id."""
    if state.mode not in MODES:
        raise StateCodecError(f"unknown mode {state.mode!r}")
    if dtype not in DTYPES:
        raise StateCodecError(f"unknown dtype {dtype!r}")
    if state.last_hidden.dim() != 1:
        raise StateCodecError(f"last_hidden must be (k,), got {tuple(state.last_hidden.shape)}")
    k, n = state.k, state.n
    if not 0 < k <= 0xFFFF or not 0 <= n <= 0xFFFFFFFF:
        raise StateCodecError(f"k = {k} or n = {n} out of range")
    model_bytes = model_id.encode()
    if len(model_bytes) > 0xFF:
        raise StateCodecError("model id longer than 255 bytes")
    values = np.concatenate([_as_float32(state.last_hidden), _memory_values(state)])
    if not np.isfinite(values).all():
        raise StateCodecError("state holds NaN or infinite values")
    exponent = _scale_exponent(values[k:], dtype)
    values[k:] *= np.float32(2.0**-exponent)  # a power of two: exact
    with np.errstate(over="ignore"):
        stored = values.astype(_NUMPY_DTYPE[dtype])
    if not np.isfinite(stored).all():  # only last_hidden can overflow: memory is scaled
        raise StateCodecError(f"last_hidden exceeds the range of {dtype}")
    payload = model_bytes + _mention_bytes(state) + stored.tobytes()
    fields = (MAGIC, FORMAT_VERSION, MODES.index(state.mode), DTYPES.index(dtype), exponent, k)
    head = _HEADER.pack(*fields, len(model_bytes), n, 0)[:_CRC_OFFSET]
    return head + struct.pack("<I", _checksum(head, payload)) + payload


def _checksum(head: bytes | memoryview, payload: bytes | memoryview) -> int:
    # The header is covered too: a flipped n or mode code can keep the length plausible.
    return zlib.crc32(payload, zlib.crc32(head))


def decode_state(data: bytes) -> DecodedState:
    """The state, model id and stored dtype; raises StateCodecError on any inconsistency."""
    if len(data) < HEADER_BYTES:
        raise StateCodecError(f"state truncated: {len(data)} bytes, header needs {HEADER_BYTES}")
    magic, version, mode_code, dtype_code, exponent, k, id_len, n, crc = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise StateCodecError(f"not a cheapqa state (magic {magic!r})")
    if version != FORMAT_VERSION:
        raise StateCodecError(f"unsupported state format version {version} (this reads 1)")
    if mode_code >= len(MODES) or dtype_code >= len(DTYPES):
        raise StateCodecError(f"unknown mode code {mode_code} or dtype code {dtype_code}")
    mode: Mode = MODES[mode_code]
    dtype: Dtype = DTYPES[dtype_code]
    np_dtype = _NUMPY_DTYPE[dtype]
    floats_at = HEADER_BYTES + id_len
    pairs: np.ndarray | None = None
    if MEMORY[mode] == "K":
        if len(data) < floats_at + _MENTION_COUNT.size:
            raise StateCodecError("state truncated before its mentions")
        (m,) = _MENTION_COUNT.unpack_from(data, floats_at)
        if len(data) < floats_at + _MENTION_COUNT.size + 8 * m:
            raise StateCodecError(f"state truncated: {len(data)} bytes, {m} mentions")
        pairs = np.frombuffer(data, _MENTION_DTYPE, 2 * m, floats_at + _MENTION_COUNT.size)
        floats_at += _MENTION_COUNT.size + pairs.nbytes
    count = payload_values(mode, k, n, 0 if pairs is None else len(pairs) // 2)
    expected = floats_at + count * np_dtype.itemsize
    if len(data) != expected:
        kind = "truncated" if len(data) < expected else "has trailing bytes"
        raise StateCodecError(f"state {kind}: {len(data)} bytes, header says {expected}")
    view = memoryview(data)
    if _checksum(view[:_CRC_OFFSET], view[HEADER_BYTES:]) != crc:
        raise StateCodecError("state corrupted: checksum mismatch")
    try:
        model_id = bytes(data[HEADER_BYTES : HEADER_BYTES + id_len]).decode()
    except UnicodeDecodeError as exc:
        raise StateCodecError("state corrupted: model id is not UTF-8") from exc
    values = np.frombuffer(data, dtype=np_dtype, count=count, offset=floats_at)
    flat = values.astype(np.float32)  # a writable copy, whatever the stored dtype
    hidden = torch.from_numpy(flat[:k])
    rest = flat[k:] * np.float32(2.0**exponent) if exponent else flat[k:]
    memory: torch.Tensor | None = None
    mentions: torch.Tensor | None = None
    if MEMORY[mode] == "H":
        memory = torch.from_numpy(rest.reshape(n, k))
    elif MEMORY[mode] == "C":
        memory = torch.from_numpy(_unpack_upper(rest, k))
    elif pairs is not None:
        memory = torch.from_numpy(rest.reshape(-1, k))
        mentions = torch.from_numpy(pairs.reshape(-1, 2).astype(np.int32))
    state = DocumentState(mode=mode, n=n, last_hidden=hidden, memory=memory, mentions=mentions)
    return DecodedState(state=state, model_id=model_id, dtype=dtype)
