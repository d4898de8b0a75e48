"""Observation, action mask and full state of one game row of the batched engine, written as
:class:`arschloch_env.observation.Encoder` and :meth:`arschloch_env.engine.Game.legal_mask`
write them (the offsets of the slices come from ``Layout`` through the config vector).

The values are the same float32 numbers the encoder packs: thermometers and one-hots are 0/1,
``seat_held`` is ``float32(c * 0.1)``, ``seat_total`` ``float32((1/15) * t)`` and the match
progress ``float32(min(round / rounds, 1))``, each computed in double precision first as in
Python.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from arschloch_env.vector_rng import JIT
from arschloch_env.vector_state import (
    C_D, C_N, C_NOFIN, C_R, C_ROUNDS, C_TARGET, C_TITLE, C_TOP, CUR, FDOWN, FUP, GIVE, GIVEN,
    GONE, HAND, MAXR, O_ALLH, O_BEAT, O_FDOWN, O_FUP, O_GIVEN, O_HAND, O_HELD, O_HIP, O_LEAD,
    O_OPEN, O_OPPM, O_OUT, O_OWND, O_PASSED, O_PHASE, O_PLACE, O_PLAYED, O_PRESENT, O_PROG,
    O_RECV, O_REV, O_TC, O_THREAT, O_TITLE, O_TOGIVE, O_TOTAL, O_TR, O_TS, O_UNSEEN, PH, PL,
    PLAY, PLAYED, POP, PPL, PSD, RECV, REV, ROUND, SZ, TAKE, TC, TOGIVE, TOPA, TOT, TR, TS,
)

# thermometers: by count (padded to 8 rows), and by suit mask
THERMO = np.array([[1.0 if j < c else 0.0 for j in range(4)] for c in range(8)], np.float32)
THERMO_MASK = THERMO[POP]
# the lead plays of one rank: the first c of its four ids
LEAD4 = np.array([[1 if j < c else 0 for j in range(4)] for c in range(8)], np.int8)

# Indices below are masked to their known ranges (``& 15``, ``& 1023`` ...): it changes no
# value, but lets the compiler drop numba's negative-index wraparound on every access.


@njit(**JIT)
def _put4(row, o, table, i):
    row[o] = table[i, 0]
    row[o + 1] = table[i, 1]
    row[o + 2] = table[i, 2]
    row[o + 3] = table[i, 3]


@njit(**JIT)
def write_obs(g, C, row):
    """The observation of the seat to act (``Encoder.observe(game, game.current)``)."""
    observe_seat(g, C, row, g[CUR])


@njit(**JIT)
def observe_seat(g, C, row, seat):
    """The observation of any seat (``Encoder.observe(game, seat)``)."""
    n, R = C[C_N] & 7, C[C_R] & 15
    seat = seat & 7
    acting = seat == g[CUR]
    ph = g[PH] & 3
    row[:] = 0.0
    h, gv, rc = HAND + MAXR * seat, GIVEN + MAXR * seat, RECV + MAXR * seat
    o_hand, o_played, o_fup = C[O_HAND] & 1023, C[O_PLAYED] & 1023, C[O_FUP] & 1023
    o_given, o_recv = C[O_GIVEN] & 1023, C[O_RECV] & 1023
    for q in range(R):
        _put4(row, o_hand + 4 * q, THERMO_MASK, g[h + q] & 15)
        _put4(row, o_played + 4 * q, THERMO, g[PLAYED + q] & 7)
        _put4(row, o_fup + 4 * q, THERMO_MASK, g[FUP + q] & 15)
        _put4(row, o_given + 4 * q, THERMO_MASK, g[gv + q] & 15)
        _put4(row, o_recv + 4 * q, THERMO_MASK, g[rc + q] & 15)
    rev = 0
    for i in range(n):
        rev += POP[g[REV + i] & 15]
    _put4(row, C[O_REV] & 1023, THERMO, rev & 7)
    t = g[TOPA]
    if t >= 0:
        row[(C[O_HIP] & 1023) + (t & 15)] = 1.0
    tc = g[TC] & 7
    if tc:
        row[(C[O_TR] & 1023) + (g[TR] & 15)] = 1.0
        row[(C[O_TC] & 1023) + tc - 1] = 1.0
        rel = g[TS] - seat
        row[(C[O_TS] & 1023) + ((rel + n if rel < 0 else rel) & 7)] = 1.0
    elif ph == PLAY and acting:
        row[C[O_LEAD] & 1023] = 1.0
    row[(C[O_PHASE] & 1023) + ph] = 1.0
    row[(C[O_TOGIVE] & 1023) + ((g[TOGIVE] & 3) if ph == GIVE and acting else 0)] = 1.0
    o = C[O_PROG] & 1023
    if C[C_ROUNDS] > 0:
        rnd, rounds = g[ROUND], C[C_ROUNDS]
        row[o] = np.float32(min(rnd / rounds, 1.0))
        if rnd >= rounds:
            row[o + 1] = 1.0
    else:
        best = 0
        for i in range(n):
            best = max(best, g[TOT + i])
        row[o] = np.float32(min(best / C[C_TARGET], 1.0))
    o_present, o_held, o_out = C[O_PRESENT] & 1023, C[O_HELD] & 1023, C[O_OUT] & 1023
    o_passed, o_place = C[O_PASSED] & 1023, C[O_PLACE] & 1023
    o_title, o_total = C[O_TITLE] & 1023, C[O_TOTAL] & 1023
    i = seat
    for rel in range(n):
        row[o_present + rel] = 1.0
        row[o_held + rel] = np.float32(g[SZ + i] * 0.1)
        p = g[PL + i] & 7
        if p:
            row[o_out + rel] = 1.0
            row[o_place + 6 * rel + p - 1] = 1.0
        if g[PSD + i]:
            row[o_passed + rel] = 1.0
        pp = g[PPL + i] & 7
        if pp:
            row[o_title + 5 * rel + (C[C_TITLE + pp - 1] & 7)] = 1.0
        row[o_total + rel] = np.float32((1.0 / 15.0) * g[TOT + i])
        i += 1
        if i == n:
            i = 0
    write_counting(g, C, row, seat)


@njit(**JIT)
def write_counting(g, C, row, seat):
    """The card-counting slices (``Encoder._counting``): ranks from the top down, so that the
    most cards of one higher rank an opponent can hold is a running maximum."""
    n, R = C[C_N] & 7, C[C_R] & 15
    h = HAND + MAXR * seat
    most, fewest = 0, 99
    for o in range(n):
        if o != seat and g[PL + o] == 0:
            most = max(most, g[SZ + o])
            fewest = min(fewest, g[SZ + o])
    o_unseen, o_oppm, o_beat = C[O_UNSEEN] & 1023, C[O_OPPM] & 1023, C[O_BEAT] & 1023
    o_ownd = C[O_OWND] & 1023
    beat, open_groups = 0, 0
    for r in range(R - 1, -1, -1):
        have = POP[g[h + r] & 15]
        u = 4 - have - g[GONE + r]
        m = min(u, most)
        if C[C_NOFIN] and r == R - 1:
            m = min(u, max(most - 1, 0))
        _put4(row, o_unseen + 4 * r, THERMO, u & 7)
        _put4(row, o_oppm + 4 * r, THERMO, m & 7)
        _put4(row, o_beat + 4 * r, THERMO, beat & 7)
        if have:
            if beat < have:
                row[o_ownd + r] = 1.0
            else:
                open_groups += 1
        beat = max(beat, m)
    o = C[O_OPEN] & 1023
    for j in range(open_groups):
        row[o + j] = 1.0
    o = C[O_THREAT] & 1023
    for j in range(4):
        if fewest <= j + 1:
            row[o + j] = 1.0


@njit(**JIT)
def write_mask(g, C, row):
    """The legal-action mask of the seat to act (``Game.legal_mask()``)."""
    R = C[C_R] & 15
    row[:] = 0
    ph = g[PH]
    s = g[CUR] & 7
    h = HAND + MAXR * s
    if ph == PLAY:
        size = g[SZ + s]
        k = g[TC] & 7
        if k == 0:
            for r in range(R):
                _put4(row, 1 + 4 * r, LEAD4, POP[g[h + r] & 15])
            top = C[C_TOP] & 15
            if C[C_NOFIN] and POP[g[h + top] & 15] >= size:
                row[4 * top + (size & 7)] = 0  # the play of the whole hand, all top rank
        else:
            row[0] = 1
            forbid = C[C_TOP] if C[C_NOFIN] else -1
            for r in range(g[TR] + 1, R):
                if POP[g[h + r] & 15] >= k and not (r == forbid and k == size):
                    row[(4 * r + k) & 127] = 1
    elif ph == TAKE:
        o = 1 + 5 * R
        for r in range(R):
            if g[FUP + r]:
                row[o + r] = 1
    else:
        o = 1 + 4 * R
        for r in range(R):
            if g[h + r]:
                row[o + r] = 1


@njit(**JIT)
def write_state(g, C, row):
    """The full-information vector of the seat to act (``Encoder.state``): the observation,
    then :func:`write_hidden`'s columns."""
    D = C[C_D]
    write_obs(g, C, row[:D])
    write_hidden(g, C, row[D:])


@njit(**JIT)
def write_hidden(g, C, row):
    """The columns of the full state after the observation's: every hand, from the seat to
    act's on, then the face-down cards (``row[0]`` is the state's column ``C_D``)."""
    n, R = C[C_N], C[C_R]
    row[:] = 0.0
    seat = g[CUR]
    o = C[O_ALLH] - C[C_D]
    i = seat
    for rel in range(n):
        for q in range(R):
            _put4(row, o + 4 * (rel * R + q), THERMO_MASK, g[HAND + MAXR * i + q])
        i += 1
        if i == n:
            i = 0
    o = C[O_FDOWN] - C[C_D]
    for q in range(R):
        _put4(row, o + 4 * q, THERMO_MASK, g[FDOWN + q])
