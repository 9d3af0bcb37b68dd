"""Checks for test writers: attend.testing.assert_gradients, for pytest.

    import attend, attend.testing

    def test_my_op():
        x = attend.tensor([[0.1, -0.4], [0.3, 0.2]], dtype=attend.float64, requires_grad=True)
        attend.testing.assert_gradients(lambda x: my_op(x), [x])
"""
from typing import Any, Callable, Sequence, Union

from . import _attend

__all__ = ["assert_gradients"]


def assert_gradients(fn: Callable[..., Any], inputs: Union[_attend.Tensor, Sequence[_attend.Tensor]],
                     **options: Any) -> _attend.GradcheckReport:
    """assert_gradients(fn, inputs, **options) -> GradcheckReport

    Runs attend.gradcheck(fn, inputs, **options) and raises AssertionError with the
    whole report as its message (which element of which input is wrong, the op
    that is wrong, an assignment where an addition belongs) when the check fails.
    Returns the report when it passes. The options are attend.gradcheck's.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this one
    report = _attend.gradcheck(fn, inputs, **options)
    if not report.passed:
        raise AssertionError("gradient check failed\n" + str(report))
    return report
