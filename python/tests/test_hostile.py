"""Hostile calls: each raises an exception (attend.Error where attend can say what is
wrong), never crashes. Each case runs in this process: a segfault fails the suite."""
import gc

import numpy as np
import pytest

import attend


@pytest.mark.parametrize("array,words", [
    (np.arange(6, dtype=np.float32).reshape(2, 3).T, "not C-contiguous"),
    (np.arange(6, dtype=np.float32)[::2], "not C-contiguous"),
    (np.arange(6, dtype=np.float64)[::-1], "negative stride"),
    (np.array([1.0, "a"], dtype=object), "object array"),
    (np.zeros((0, 3), np.float32), "empty"),
    (np.zeros(3, np.int64), "int64"),
    (np.zeros(3, np.float16), "float16"),
    (np.zeros(3, np.complex64), "complex"),
    (np.array(["a", "b"]), "dtype <U1"),
    (np.zeros((1,) * 7, np.float32), "7 axes"),
])
def test_from_numpy_refuses_what_it_cannot_share(array, words):
    with pytest.raises(attend.Error, match=words):
        attend.from_numpy(array)


def test_from_numpy_refuses_read_only_and_misaligned_arrays():
    a = np.zeros(4, np.float32)
    a.flags.writeable = False
    with pytest.raises(attend.Error, match="read-only"):
        attend.from_numpy(a)
    raw = np.zeros(33, np.uint8)
    misaligned = raw[1:].view(np.float64)
    with pytest.raises(attend.Error, match="aligned"):
        attend.from_numpy(misaligned)


@pytest.mark.parametrize("value", [None, "text", b"bytes", [1, [2, 3]], {"a": 1}, object(), np.zeros(0),
                                   np.array([None, None]), [1j, 2j]])
def test_tensor_refuses_what_is_not_numbers(value):
    with pytest.raises(attend.Error):
        attend.tensor(value)


def test_from_numpy_wants_an_array():
    for value in (None, [1.0, 2.0], 3.0, attend.ones(2)):
        with pytest.raises(attend.Error, match="numpy.ndarray"):
            attend.from_numpy(value)


@pytest.mark.parametrize("dtype", ["int32", np.int64, "float16", "nonsense", 3, object])
def test_wrong_dtypes(dtype):
    with pytest.raises(attend.Error):
        attend.zeros((2,), dtype)


def test_wrong_shapes_say_what_is_wrong():
    a, b = attend.ones((2, 3)), attend.ones((4, 5))
    with pytest.raises(attend.Error, match="matmul"):
        a @ b
    with pytest.raises(attend.Error):
        a + b
    with pytest.raises(attend.Error, match="axis"):
        attend.softmax(a, 5)
    with pytest.raises(attend.Error):
        attend.reshape(a, (7,))
    with pytest.raises(attend.Error):
        attend.index_select(a, [0, 9])
    with pytest.raises(attend.Error):
        attend.cross_entropy(a, [0, 3])
    with pytest.raises(attend.Error, match="integers"):
        attend.cross_entropy(a, [0.5, 1.0])
    with pytest.raises(attend.Error):
        a + attend.ones((2, 3), attend.float64)  # dtypes differ
    with pytest.raises(attend.Error):
        attend.ones(2).item()
    with pytest.raises(attend.Error):
        attend.zeros((2, -1))
    with pytest.raises(attend.Error):
        attend.zeros((1, 2, 3, 4, 5, 6, 7))
    with pytest.raises(attend.Error):
        attend.zeros(("a",))
    with pytest.raises(attend.Error):
        attend.zeros(1.5)


def test_huge_sizes_raise():
    with pytest.raises(attend.Error):
        attend.zeros((1 << 40, 1 << 40))  # more elements than 64 bits
    with pytest.raises(attend.Error):
        attend.zeros((1 << 70,))
    with pytest.raises((MemoryError, attend.Error)):
        attend.empty((1 << 50,))  # 4 PiB


def test_none_where_a_tensor_goes():
    x = attend.ones(2)
    for call in (lambda: attend.tanh(None), lambda: attend.matmul(x, None), lambda: x + None,
                 lambda: attend.add(None, None), lambda: attend.concat([x, None], 0)):
        with pytest.raises((attend.Error, TypeError)):
            call()
    with pytest.raises(attend.Error, match="None"):
        attend.cross_entropy(attend.ones((1, 2)), None)


def test_backward_misuse():
    x = attend.ones(3)
    with pytest.raises(attend.Error):
        (x * 2.0).backward()  # nothing requires grad
    y = attend.ones(3, attend.float64).requires_grad_()
    with pytest.raises(attend.Error):
        (y * 2.0).backward()  # not one element, no grad given
    with pytest.raises(attend.Error):
        (y * 2.0).backward(attend.ones(4, attend.float64))
    z = (y * y).sum()
    z.backward()
    with pytest.raises(attend.Error):
        z.backward()  # the graph was freed


def test_memory_shared_with_numpy_outlives_every_handle():
    a = np.full(64, 3.0)
    t = attend.from_numpy(a)
    view = t.numpy()
    del a, t
    gc.collect()
    for _ in range(10):
        attend.ones(64, attend.float64)
    assert view.sum() == 192.0


def test_ctx_and_g_kept_past_their_call_raise():
    kept = {}

    def forward(ctx, x):
        kept["ctx"] = ctx
        ctx.save(x)
        return x * 2.0

    def backward(ctx, g):
        kept["bctx"], kept["g"] = ctx, g
        g.dx(0).add_(g.dy() * 2.0)

    op = attend.CustomOp("twice", forward, backward)
    x = attend.ones(2, attend.float64).requires_grad_()
    op(x).sum().backward()
    gc.collect()
    with pytest.raises(attend.Error, match="kept past"):
        kept["ctx"].saved(0)
    with pytest.raises(attend.Error, match="kept past"):
        kept["ctx"].save(x)
    with pytest.raises(attend.Error, match="kept past"):
        kept["bctx"].saved_tensors
    with pytest.raises(attend.Error, match="kept past"):
        kept["g"].dx(0)
    with pytest.raises(attend.Error, match="kept past"):
        kept["g"].dy()


def test_an_exception_in_a_python_hook_during_backward_propagates():
    x = attend.tensor([1.0, 2.0], requires_grad=True)

    def on_grad(dy):
        raise ValueError("from the hook")

    y = attend.tap(x * 2.0, on_grad).sum()
    with pytest.raises(ValueError, match="from the hook"):
        y.backward()
    seen = []
    z = attend.tap(x * 2.0, lambda dy: seen.append(dy.numpy().tolist())).sum()
    z.backward()
    assert seen == [[1.0, 1.0]]
