import struct
import zlib
from dataclasses import replace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from encoder.model.modes import MODES
from encoder.model.state import DocumentState
from store.codec import HEADER_BYTES, decode_state, encode_state
from store.errors import StateCodecError
from tests.store.states import make_state

FAST = settings(max_examples=60, deadline=None)
MODEL_ID = "linear-k100-3f2a9c1b"


def assert_float16_close(decoded: torch.Tensor, original: torch.Tensor) -> None:
    # float16 keeps 11 significant bits; tiny entries may fall to subnormals of the scaled range.
    largest = float(original.abs().max()) if original.numel() else 0.0
    atol = 1e-7 + largest * 2.0**-20
    torch.testing.assert_close(decoded, original, rtol=2.0**-10, atol=atol)


@FAST
@given(
    mode=st.sampled_from(MODES),
    k=st.integers(1, 12),
    n=st.integers(0, 20),
    seed=st.integers(0, 2**31),
    model_id=st.text(max_size=40),
)
def test_float32_round_trip_is_exact(mode: str, k: int, n: int, seed: int, model_id: str) -> None:
    state = make_state(mode, k, n, seed)
    data = encode_state(state, model_id=model_id, dtype="float32")
    m = (n + 2) // 3  # make_state's mentions: every third token
    kept = {"none": 0, "linear": k * (k + 1) // 2, "gated": k * (k + 1) // 2, "softmax": n * k}
    kept["mentions"] = m * k
    pairs = 4 + 8 * m if mode == "mentions" else 0  # the count, then (entity, position) pairs
    assert len(data) == HEADER_BYTES + len(model_id.encode()) + pairs + 4 * (k + kept[mode])
    decoded = decode_state(data)
    assert (decoded.model_id, decoded.dtype) == (model_id, "float32")
    got = decoded.state
    assert (got.mode, got.n, got.k) == (mode, n, k)
    assert torch.equal(got.last_hidden, state.last_hidden)
    if state.memory is None:
        assert got.memory is None
    else:
        assert got.memory is not None and torch.equal(got.memory, state.memory)
    if state.mentions is None:
        assert got.mentions is None
    else:
        assert got.mentions is not None and torch.equal(got.mentions, state.mentions)


@FAST
@given(
    mode=st.sampled_from(MODES),
    k=st.integers(1, 12),
    n=st.integers(0, 20),
    seed=st.integers(0, 2**31),
    # Large magnitudes push C past float16's 65504 and exercise the power-of-two scaling.
    magnitude=st.sampled_from([1e-3, 1.0, 300.0, 1e5]),
)
def test_float16_round_trip_within_float16_precision(
    mode: str, k: int, n: int, seed: int, magnitude: float
) -> None:
    made = make_state(mode, k, n, seed, magnitude)
    # A GRU's last hidden state lies in (-1, 1); only the memory grows with n.
    state = replace(made, last_hidden=torch.tanh(made.last_hidden))
    decoded = decode_state(encode_state(state, model_id=MODEL_ID, dtype="float16"))
    got = decoded.state
    assert decoded.dtype == "float16" and (got.mode, got.n, got.k) == (mode, n, k)
    assert got.last_hidden.dtype == torch.float32
    assert_float16_close(got.last_hidden, state.last_hidden)
    if state.memory is None:
        assert got.memory is None
    else:
        assert got.memory is not None and torch.isfinite(got.memory).all()
        assert_float16_close(got.memory, state.memory)


@FAST
@given(k=st.integers(1, 30), seed=st.integers(0, 2**31))
def test_packed_upper_triangle_round_trip(k: int, seed: int) -> None:
    a = torch.randn(k, k, generator=torch.Generator().manual_seed(seed))
    symmetric = a + a.T
    state = DocumentState("linear", 3, torch.zeros(k), symmetric)
    data = encode_state(state, model_id=MODEL_ID, dtype="float32")
    assert len(data) == HEADER_BYTES + len(MODEL_ID) + 4 * (k + k * (k + 1) // 2)
    decoded = decode_state(data).state.memory
    assert decoded is not None and torch.equal(decoded, symmetric)


def test_linear_state_keeps_only_the_triangle() -> None:
    state = make_state("linear", 100, 750)
    data = encode_state(state, model_id=MODEL_ID, dtype="float16")
    assert len(data) == HEADER_BYTES + len(MODEL_ID) + 2 * (100 + 100 * 101 // 2)
    assert len(data) <= 100 * 101 + 256


def test_matmul_rounding_asymmetry_is_accepted_but_a_non_symmetric_matrix_is_not() -> None:
    h = torch.tanh(torch.randn(50, 16))
    near = DocumentState("linear", 50, h[-1], h.T @ h)
    decoded = decode_state(encode_state(near, model_id="m", dtype="float32")).state.memory
    assert decoded is not None
    torch.testing.assert_close(decoded, near.memory)
    skewed = DocumentState("gated", 50, h[-1], torch.randn(16, 16) * 10)
    with pytest.raises(StateCodecError, match="symmetric"):
        encode_state(skewed, model_id="m", dtype="float32")


@pytest.mark.parametrize(
    "state",
    [
        DocumentState("linear", 3, torch.zeros(4), torch.zeros(3, 3)),
        DocumentState("softmax", 5, torch.zeros(4), torch.zeros(4, 4)),
        DocumentState("none", 3, torch.zeros(4), torch.zeros(4, 4)),
        DocumentState("gated", 3, torch.zeros(4), None),
        DocumentState("linear", 3, torch.zeros(2, 4), torch.zeros(4, 4)),
        DocumentState("linear", 3, torch.zeros(4), torch.full((4, 4), float("nan"))),
        DocumentState("none", 3, torch.tensor([1.0, float("inf")]), None),
    ],
)
def test_malformed_states_are_refused(state: DocumentState) -> None:
    with pytest.raises(StateCodecError):
        encode_state(state, model_id="m", dtype="float16")


def test_last_hidden_beyond_float16_is_refused_not_stored_as_inf() -> None:
    state = DocumentState("none", 1, torch.tensor([1.0, 7e4]), None)
    with pytest.raises(StateCodecError, match="float16"):
        encode_state(state, model_id="m", dtype="float16")
    assert decode_state(encode_state(state, model_id="m", dtype="float32")).state.n == 1


def test_model_id_over_255_bytes_is_refused() -> None:
    with pytest.raises(StateCodecError, match="model id"):
        encode_state(make_state("none", 4, 2), model_id="é" * 128, dtype="float32")


@pytest.mark.parametrize("mode", MODES)
def test_every_truncation_is_an_error(mode: str) -> None:
    data = encode_state(make_state(mode, 4, 3), model_id="m1", dtype="float16")
    for length in range(len(data)):
        with pytest.raises(StateCodecError):
            decode_state(data[:length])
    with pytest.raises(StateCodecError, match="trailing"):
        decode_state(data + b"\0")


@pytest.mark.parametrize(("mode", "k", "n"), [("linear", 3, 2), ("softmax", 3, 2), ("none", 3, 2)])
def test_every_single_bit_flip_is_an_error(mode: str, k: int, n: int) -> None:
    # softmax with n = (k + 1) / 2 has exactly the size of gated: the checksum must see the header.
    data = encode_state(make_state(mode, k, n, seed=7), model_id="m", dtype="float16")
    for bit in range(len(data) * 8):
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(StateCodecError):
            decode_state(bytes(flipped))


def _rewrite_header(data: bytes, offset: int, value: bytes) -> bytes:
    """Changes header bytes and recomputes the checksum, so only the field itself is wrong."""
    out = bytearray(data)
    out[offset : offset + len(value)] = value
    crc = zlib.crc32(bytes(out[HEADER_BYTES:]), zlib.crc32(bytes(out[: HEADER_BYTES - 4])))
    out[HEADER_BYTES - 4 : HEADER_BYTES] = struct.pack("<I", crc)
    return bytes(out)


def test_wrong_version_and_wrong_magic_are_named() -> None:
    data = encode_state(make_state("linear", 4, 3), model_id="m", dtype="float32")
    with pytest.raises(StateCodecError, match="version 2"):
        decode_state(_rewrite_header(data, 4, b"\x02"))
    with pytest.raises(StateCodecError, match="magic"):
        decode_state(_rewrite_header(data, 0, b"XXXX"))
    with pytest.raises(StateCodecError, match="mode code"):
        decode_state(_rewrite_header(data, 5, b"\x09"))
    with pytest.raises(StateCodecError):
        decode_state(b"")
