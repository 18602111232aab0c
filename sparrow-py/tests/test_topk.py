import numpy as np
import pytest

import sparrow
from reference import order_ranks, topk_rows

INT_TYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
FLOAT_TYPES = [np.float16, np.float32, np.float64]


def keys_with_ties(rng, shape, dtype):
    """Keys drawn from few values (many ties), with NaN and both zeros for floats."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        pool = np.array([np.nan, -np.nan, -0.0, 0.0, 1.5, -2.0, np.inf, -np.inf, 3.25, 7.0], dtype=dt)
    else:
        info = np.iinfo(dt)
        pool = np.array([info.min, info.max, 0, 1, 2, info.max - 1, 5], dtype=dt)
    return rng.choice(pool, size=shape)


def check(x, k, dim, largest, sorted_, tie):
    vals, idx = sparrow.topk(x, k, dim=dim, largest=largest, sorted=sorted_, tie_break=tie, device="cpu")
    moved = np.moveaxis(x, dim, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    want = topk_rows(flat, k, largest, sorted_, tie)
    got = np.moveaxis(idx, dim, -1).reshape(-1, k)
    assert idx.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    # The original bits come back: -0.0 stays -0.0, NaN's sign and payload stay.
    gv = np.moveaxis(vals, dim, -1).reshape(-1, k)
    wv = np.take_along_axis(flat, want, axis=1)
    assert gv.dtype == x.dtype
    np.testing.assert_array_equal(gv.view(f"u{x.itemsize}"), wv.view(f"u{x.itemsize}"))


@pytest.mark.parametrize("dtype", INT_TYPES + FLOAT_TYPES)
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("tie", ["smaller-index", "larger-index"])
def test_topk_every_type_with_ties_nan_and_zeros(dtype, largest, tie):
    rng = np.random.default_rng(7)
    x = keys_with_ties(rng, (6, 37), dtype)
    for sorted_ in (True, False):
        check(x, 5, -1, largest, sorted_, tie)
    check(x, 37, 1, largest, True, tie)
    check(x, 1, 0, largest, True, tie)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_topk_any_dimension(dim):
    rng = np.random.default_rng(3)
    x = keys_with_ties(rng, (4, 5, 6), np.float32)
    check(x, 3, dim, True, True, "smaller-index")
    vals, idx = sparrow.topk(x, 3, dim=dim, device="cpu")
    shape = list(x.shape)
    shape[dim] = 3
    assert vals.shape == tuple(shape) and idx.shape == tuple(shape)


def test_topk_matches_numpy_on_distinct_floats():
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal((50, 1000)).astype(dtype)
        vals, idx = sparrow.topk(x, 20, device="cpu")
        want = -np.sort(-x, axis=1)[:, :20]
        np.testing.assert_array_equal(vals, want)
        np.testing.assert_array_equal(np.take_along_axis(x, idx, 1), want)


def test_topk_fast_tie_break_selects_a_correct_set():
    rng = np.random.default_rng(5)
    x = keys_with_ties(rng, (8, 64), np.float32)
    vals, idx = sparrow.topk(x, 10, tie_break="fast", device="cpu")
    for r in range(8):
        ranks = order_ranks(x[r])
        kth = np.sort(ranks)[::-1][9]
        assert (ranks[idx[r]] >= kth).all() and len(set(idx[r])) == 10
        assert sorted(ranks[idx[r]], reverse=True) == list(ranks[idx[r]])


def test_topk_empty_and_zero_k():
    x = np.zeros((0, 5), dtype=np.float32)
    v, i = sparrow.topk(x, 2, device="cpu")
    assert v.shape == (0, 2) and i.shape == (0, 2)
    v, i = sparrow.topk(np.ones((3, 4)), 0, device="cpu")
    assert v.shape == (3, 0)


def test_segmented_topk_with_empty_segments_padding_and_per_segment_k():
    keys = np.array([5, 1, 9, 9, 3, 7, 2], dtype=np.int32)
    offsets = [0, 3, 3, 4, 7]
    v, i = sparrow.segmented_topk(keys, offsets, k=2, sorted=True, device="cpu")
    assert v.shape == (4, 2)
    np.testing.assert_array_equal(i, [[2, 0], [-1, -1], [0, -1], [1, 0]])
    np.testing.assert_array_equal(v[0], [9, 5])
    assert v[1, 0] == np.iinfo(np.int32).min
    v, i = sparrow.segmented_topk(keys, offsets, k_per_segment=[1, 0, 1, 3], sorted=True, device="cpu")
    np.testing.assert_array_equal(i[0, :1], [2])
    np.testing.assert_array_equal(i[3], [1, 0, 2])
    v, i = sparrow.segmented_topk(keys, offsets, k=1, largest=False, device="cpu")
    np.testing.assert_array_equal(i[:, 0], [1, -1, 0, 2])
    assert v[1, 0] == np.iinfo(np.int32).max


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.uint8])
def test_segmented_topk_against_reference(dtype):
    rng = np.random.default_rng(11)
    lens = rng.integers(0, 60, size=30)
    offsets = np.concatenate([[0], np.cumsum(lens)])
    keys = keys_with_ties(rng, int(offsets[-1]), dtype)
    v, i = sparrow.segmented_topk(keys, offsets, k=7, sorted=True, device="cpu")
    for s in range(30):
        seg = keys[offsets[s]:offsets[s + 1]]
        kk = min(7, len(seg))
        want = topk_rows(seg.reshape(1, -1), kk)[0] if kk else np.zeros(0, np.int64)
        np.testing.assert_array_equal(i[s, :kk], want)
        assert (i[s, kk:] == -1).all()


def test_bad_arguments_name_themselves():
    x = np.ones((3, 4), dtype=np.float32)
    cases = [
        (lambda: sparrow.topk(x, 5), "`k`"),
        (lambda: sparrow.topk(x, -1), "`k`"),
        (lambda: sparrow.topk(x, 1.5), "`k`"),
        (lambda: sparrow.topk(x, 1, dim=2), "`dim`"),
        (lambda: sparrow.topk(x, 1, tie_break="first"), "`tie_break`"),
        (lambda: sparrow.topk(x, 1, device="tpu"), "`device`"),
        (lambda: sparrow.topk(np.float32(1.0), 1), "`x`"),
        (lambda: sparrow.topk(np.ones((2, 2), dtype=np.complex64), 1), "`x`"),
        (lambda: sparrow.segmented_topk(x, [0, 12], k=1), "`keys`"),
        (lambda: sparrow.segmented_topk(x.ravel(), [0, 5, 3, 12], k=1), "offsets"),
        (lambda: sparrow.segmented_topk(x.ravel(), [0, 12]), "`k`"),
        (lambda: sparrow.segmented_topk(x.ravel(), [0, 12], k_per_segment=[1, 2]), "k"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError, match=name):
            call()


def test_empty_and_read_only_inputs():
    v, i = sparrow.segmented_topk(np.empty(0, np.float32), [0, 0], k=1, device="cpu")
    assert v.shape == (1, 0) or (i == -1).all()
    x = np.arange(20, dtype=np.float64).reshape(4, 5)
    x.flags.writeable = False
    v, i = sparrow.topk(x, 2, device="cpu")
    np.testing.assert_array_equal(i, [[4, 3]] * 4)


def test_segment_arguments_must_be_integers():
    keys = np.arange(10, dtype=np.float32)
    with pytest.raises(ValueError, match="`offsets`"):
        sparrow.segmented_topk(keys, [0, 5.7, 10], k=1)
    with pytest.raises(ValueError, match="`k_per_segment`"):
        sparrow.segmented_topk(keys, [0, 5, 10], k_per_segment=[1.9, 2.2])
    with pytest.raises(ValueError, match="`k`"):
        sparrow.segmented_topk(keys, [0, 5, 10], k=2**64)


def test_bfloat16_through_torch_or_ml_dtypes():
    torch = pytest.importorskip("torch") if _has("torch") else None
    if torch is not None:
        x = torch.tensor([[1.0, -0.0, float("nan"), 3.0, 0.0]], dtype=torch.bfloat16)
        v, i = sparrow.topk(x, 3, device="cpu")
        assert v.dtype == torch.bfloat16 and i.dtype == torch.int64
        assert i.tolist() == [[2, 3, 0]]
        return
    ml = pytest.importorskip("ml_dtypes")
    x = np.array([[1.0, -0.0, np.nan, 3.0, 0.0]], dtype=ml.bfloat16)
    v, i = sparrow.topk(x, 3, device="cpu")
    assert v.dtype == x.dtype and i.tolist() == [[2, 3, 0]]


def _has(mod):
    import importlib.util

    return importlib.util.find_spec(mod) is not None
