"""Thread settings for the PyTorch twins, so that `--threads N` means N threads
on both sides.

torch.set_num_threads sets PyTorch's own (OpenMP) pool only. Debian's
python3-torch does its matrix products in the system BLAS, OpenBLAS, whose
thread pool is separate and starts as wide as the machine: without the
openblas_set_num_threads call below, a "1 thread" PyTorch run does its GEMMs on
every core, which flatters PyTorch in a one-thread comparison. attend's
--threads sets OpenBLAS's pool, its only one.
"""
import ctypes

import torch


def loaded_openblas():
    """The path of the OpenBLAS library this process has loaded, or None."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "libopenblas" in path.rsplit("/", 1)[-1] and ".so" in path:
                return path
    return None


def set_threads(n):
    """Sets PyTorch's and OpenBLAS's thread counts to n; returns a line saying what was set."""
    torch.set_num_threads(n)
    path = loaded_openblas()
    if path is None:
        return f"torch threads {n}; no OpenBLAS loaded (BLAS threads not set)"
    blas = ctypes.CDLL(path)
    blas.openblas_set_num_threads(ctypes.c_int(n))
    # The kernels, as attend bench prints them: both sides load the same OpenBLAS,
    # and OPENBLAS_CORETYPE, when set, chooses the kernels of both.
    blas.openblas_get_corename.restype = ctypes.c_char_p
    kernels = blas.openblas_get_corename().decode()
    return f"torch threads {n}; OpenBLAS threads {blas.openblas_get_num_threads()}, kernels {kernels} ({path})"
