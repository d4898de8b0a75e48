"""numpy's seeding and shuffling, bit for bit, as numba functions for the batched engine.

The reference engine deals every round with ``numpy.random.default_rng(seed)``'s
``permutation(deck_size)``. To deal the same cards without numpy in the loop, this module
reimplements the pieces involved:

- ``SeedSequence(entropy).generate_state(k)`` (the entropy pool hash of numpy's ``bit_generator``);
- ``PCG64`` (128-bit LCG, XSL-RR output; 32-bit draws use the low half of a 64-bit draw first
  and keep the high half for the next one);
- ``Generator.permutation(n)``: Fisher-Yates from the top, ``j = random_interval(i)`` by masked
  rejection sampling of 32-bit draws.

One game's stream is a row ``r`` of a uint64 array (columns below). The test suite checks all of
it against numpy for many seeds.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba
import numba.core.options
import numpy as np
from numba import njit

# Numba's reference counting of arrays passed between functions (atomic increments and
# decrements on every call) cost as much as the rules themselves; nothing in the batched engine
# allocates, so it is compiled without the runtime's reference counting where numba has that
# option (the results are the same either way).
JIT = dict(cache=True, nogil=True)
if hasattr(numba.core.options.DefaultOptions, "_nrt"):
    JIT["_nrt"] = False

# columns of a stream row: PCG64 state (high, low), increment (high, low), the buffered half
# of a 64-bit draw (flag, value), the action sampler's splitmix64 state, the game's series
# seed, its running match's seed and index in the series, then scratch words for the seeding
SHI, SLO, IHI, ILO, HAS32, U32, SAMP, GSEED, MSEED, MIDX = range(10)
SCR_ENT, SCR_MIX, SCR_OUT = 10, 18, 22
NRNG = 30

_M32 = np.uint64(0xFFFFFFFF)
_U1 = np.uint64(1)
_U16 = np.uint64(16)
_U32 = np.uint64(32)
_U58 = np.uint64(58)
_U63 = np.uint64(63)
_U64 = np.uint64(64)
_MUL_HI = np.uint64(2549297995355413924)
_MUL_LO = np.uint64(4865540595714422341)
_INIT_A = np.uint64(0x43B0D7E5)
_MULT_A = np.uint64(0x931E8875)
_INIT_B = np.uint64(0x8B51F9DD)
_MULT_B = np.uint64(0x58F38DED)
_MIX_L = np.uint64(0xCA01F9DD)
_MIX_R = np.uint64(0x4973F715)


@njit(**JIT)
def _hashmix(v, hc):
    v = v ^ hc
    hc = (hc * _MULT_A) & _M32
    v = (v * hc) & _M32
    return v ^ (v >> _U16), hc


@njit(**JIT)
def _mix(x, y):
    r = (_MIX_L * x - _MIX_R * y) & _M32
    return r ^ (r >> _U16)


@njit(**JIT)
def _int_words(x, r, k):
    """Appends the 32-bit words of the non-negative int ``x`` (``[0]`` for 0) to the entropy
    words of row ``r``; returns the new count."""
    u = np.uint64(x)
    if u == 0:
        r[SCR_ENT + k] = 0
        return k + 1
    while u > 0:
        r[SCR_ENT + k] = u & _M32
        u = u >> _U32
        k += 1
    return k


@njit(**JIT)
def seed_words(r, nent, nout):
    """``SeedSequence(entropy).generate_state(nout)`` (uint32 words): from the ``nent``
    entropy words of row ``r`` into its output words (both counts at most 8)."""
    hc = _INIT_A
    for i in range(4):
        v = r[SCR_ENT + i] if i < nent else np.uint64(0)
        r[SCR_MIX + i], hc = _hashmix(v, hc)
    for src in range(4):
        for dst in range(4):
            if src != dst:
                h, hc = _hashmix(r[SCR_MIX + src], hc)
                r[SCR_MIX + dst] = _mix(r[SCR_MIX + dst], h)
    for src in range(4, nent):
        for dst in range(4):
            h, hc = _hashmix(r[SCR_ENT + src], hc)
            r[SCR_MIX + dst] = _mix(r[SCR_MIX + dst], h)
    hc = _INIT_B
    for i in range(nout):
        v = r[SCR_MIX + i % 4] ^ hc
        hc = (hc * _MULT_B) & _M32
        v = (v * hc) & _M32
        r[SCR_OUT + i] = v ^ (v >> _U16)


@njit(**JIT)
def series_seed(r, seed, index):
    """``SeedSequence([seed, index]).generate_state(1)[0] >> 1``, the seed of match ``index``
    of a series started with ``seed`` (as ``arschloch_env.cli.match_seed``); ``r`` is scratch."""
    k = _int_words(seed, r, 0)
    k = _int_words(index, r, k)
    seed_words(r, k, 1)
    return np.int64(r[SCR_OUT] >> _U1)


@njit(**JIT)
def series_seeds(seed, out, r):
    """``series_seed(seed, j)`` for every j of ``out`` (``r``: a scratch row)."""
    for j in range(out.shape[0]):
        out[j] = series_seed(r, seed, j)


@njit(**JIT)
def _mul64(a, b):
    """The full 128-bit product of two uint64, as (high, low)."""
    a0 = a & _M32
    a1 = a >> _U32
    b0 = b & _M32
    b1 = b >> _U32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    mid = (p00 >> _U32) + (p01 & _M32) + (p10 & _M32)
    lo = (mid << _U32) | (p00 & _M32)
    hi = a1 * b1 + (p01 >> _U32) + (p10 >> _U32) + (mid >> _U32)
    return hi, lo


@njit(**JIT)
def _pcg_step(r):
    shi = r[SHI]
    slo = r[SLO]
    hi, lo = _mul64(slo, _MUL_LO)
    hi = hi + slo * _MUL_HI + shi * _MUL_LO
    lo2 = lo + r[ILO]
    carry = _U1 if lo2 < lo else np.uint64(0)
    r[SHI] = hi + r[IHI] + carry
    r[SLO] = lo2


@njit(**JIT)
def _pcg_next64(r):
    _pcg_step(r)
    shi = r[SHI]
    x = shi ^ r[SLO]
    rot = shi >> _U58
    return (x >> rot) | (x << ((_U64 - rot) & _U63))


@njit(**JIT)
def _pcg_next32(r):
    if r[HAS32]:
        r[HAS32] = 0
        return r[U32]
    v = _pcg_next64(r)
    r[HAS32] = 1
    r[U32] = v >> _U32
    return v & _M32


@njit(**JIT)
def pcg_seed(r, seed):
    """Seeds the stream of row ``r`` as ``numpy.random.PCG64(seed)``."""
    k = _int_words(seed, r, 0)
    seed_words(r, k, 8)
    w = SCR_OUT
    s_hi = r[w] | (r[w + 1] << _U32)
    s_lo = r[w + 2] | (r[w + 3] << _U32)
    q_hi = r[w + 4] | (r[w + 5] << _U32)
    q_lo = r[w + 6] | (r[w + 7] << _U32)
    r[IHI] = (q_hi << _U1) | (q_lo >> _U63)
    r[ILO] = (q_lo << _U1) | _U1
    r[SHI] = 0
    r[SLO] = 0
    _pcg_step(r)
    lo = r[SLO] + s_lo
    carry = _U1 if lo < s_lo else np.uint64(0)
    r[SHI] = r[SHI] + s_hi + carry
    r[SLO] = lo
    _pcg_step(r)
    r[HAS32] = 0
    r[U32] = 0


@njit(**JIT)
def _interval(r, mx):
    """numpy's ``random_interval``: uniform in 0..mx by masked rejection (32-bit draws)."""
    if mx == 0:
        return 0
    m = np.uint64(mx)
    mask = m
    mask |= mask >> np.uint64(1)
    mask |= mask >> np.uint64(2)
    mask |= mask >> np.uint64(4)
    mask |= mask >> np.uint64(8)
    mask |= mask >> np.uint64(16)
    while True:
        v = _pcg_next32(r) & mask
        if v <= m:
            return np.int64(v)


@njit(**JIT)
def permutation(r, perm, o, size):
    """``Generator.permutation(size)`` of the stream of row ``r`` into ``perm[o:o+size]``."""
    for i in range(size):
        perm[o + i] = i
    for i in range(size - 1, 0, -1):
        j = _interval(r, i)
        t = perm[o + i]
        perm[o + i] = perm[o + j]
        perm[o + j] = t


@njit(**JIT)
def permutations(seed, size, count, out, r):
    """The first ``count`` permutations of ``default_rng(seed)`` into ``out`` [count, size]
    (a test hook)."""
    pcg_seed(r, seed)
    for k in range(count):
        permutation(r, out[k], 0, size)


@njit(**JIT)
def splitmix(r):
    """The next draw of the action sampler's splitmix64 stream."""
    z = r[SAMP] + np.uint64(0x9E3779B97F4A7C15)
    r[SAMP] = z
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


# -- the compiled-code cache ------------------------------------------------------------------

KERNEL_MODULES = ("vector_state", "vector_rng", "vector_obs", "vector_round", "vector_kernels",
                  "cards")
"""The modules the kernels are compiled from (``cards``: the suit orders, jitted in
``vector_round`` and ``vector_state``)."""


def _drop_stale_cache(dispatcher) -> None:
    """Numba checks a cached function against its own source file only, but the batched
    kernels are linked from several modules: after an edit of one of them, a kernel cached from
    an unchanged file would still run the old code. So the cache of all these modules is
    dropped whenever any of their sources changes (a stamp file in the cache directory)."""
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for name in KERNEL_MODULES:
        digest.update((here / f"{name}.py").read_bytes())
    try:
        cache = Path(dispatcher._cache._cache_path)
        stamp = cache / "vector_kernels.sources"
        if stamp.is_file() and stamp.read_text() == digest.hexdigest():
            return
        for name in KERNEL_MODULES:
            for f in cache.glob(f"{name}.*.nb[ic]"):
                f.unlink(missing_ok=True)
        cache.mkdir(parents=True, exist_ok=True)
        tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}")
        tmp.write_text(digest.hexdigest())
        os.replace(tmp, stamp)
    except (AttributeError, OSError):  # no cache (or another numba): nothing to drop
        pass


_drop_stale_cache(splitmix)
