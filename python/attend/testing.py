"""Checks for test writers (pytest): attend.testing.assert_gradients."""
