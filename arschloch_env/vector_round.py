"""Round set-up and round end of the batched engine: dealing (the reference's shuffles), the
left-over swap and the exchange (phases take, lay, give), the lowest-club leader, the places and
points at the round end, and a new match. Functions of one game row ``g`` (see
:mod:`arschloch_env.vector_kernels`)."""

from __future__ import annotations

import numpy as np
from numba import njit, types

from arschloch_env import cards
from arschloch_env.vector_rng import GSEED, JIT, MIDX, MSEED, pcg_seed, permutation, series_seed
from arschloch_env.vector_state import (
    ACTIVE, C_DEALT, C_DECK, C_N, C_NOFIN, C_PEX, C_R, C_REWPTS, C_ROTATE, C_ROUNDS, C_SWAP,
    C_TARGET, C_TOP, C_VEX, C_WINPTS, CUR, EV_DATA, EV_EXCHANGE, EV_HAND, EV_LEFTOVER,
    EV_MATCH, EV_MATCH_END, EV_OUT, EV_ROUND, EV_ROUND_END, EV_SWAP, EVN, FDOWN, FUP, GBUF,
    GIVE, GIVEN, GIVETO, GONE, HAND, LAY, LEAD, LOWK, LOWSUIT, LTOT, LWIN, MAXR,
    NBOT, NTOP, OUT_EMPTIED, OUT_LAST, OUT_ONLY_TOP, PASSES, PERM, PH, PL, PLAY, PLAYED, POP,
    PICK, PPL, PSD, RECV, REV, ROUND, SKEY_HI, SKEY_LO, SLOT, SWAP, SZ, TAKE, TAKEM, TAKEQ,
    TASK, TC, TOGIVE, TOPA, TR, TS, TOT,
)


# The small helpers called from many places have explicit signatures: one compiled version
# instead of one per combination of argument types (int16 columns, int64, literals).
_ROW, _EV = types.int16[::1], types.int64[:, ::1]


@njit(types.int64(_ROW, _EV, types.int64, types.int64, types.int64, types.int64), **JIT)
def _ev(g, ev, typ, a1, a2, a3):
    """Appends an event row if the game is recorded; its index, or -1."""
    if g[SLOT] < 0:
        return -1
    k = g[EVN]
    g[EVN] = k + 1
    if k >= ev.shape[0]:
        return -1  # overflow: reported by the caller, which sees the count
    row = ev[k]
    row[:] = 0
    row[0] = typ
    row[1] = a1
    row[2] = a2
    row[3] = a3
    return k


@njit(types.int64(_ROW, types.int64, types.int64), **JIT)
def _next_active(g, s, n):
    s = (s & 7) + 1
    if s == n:
        s = 0
    while g[SZ + s] == 0:
        s += 1
        if s == n:
            s = 0
    return s


@njit(types.int64(_ROW, types.int64, types.int64), **JIT)
def _prev_holder(g, place, n):
    """The seat that took ``place`` in the previous round."""
    for i in range(n):
        if g[PPL + i] == place:
            return i
    return -1


# the reference's suit choice (arschloch_env.cards), compiled from the same source
_round_suit_key = njit(**JIT)(cards.round_suit_key)
_suit_order = njit(**JIT)(cards.suit_order)
_M32 = np.uint64(0xFFFFFFFF)


@njit(**JIT)
def _chosen(g, s, q, k):
    """The suit mask of the ``k`` cards of rank ``q`` that seat ``s`` moves (``Game.chosen``)."""
    key = (np.int64(g[SKEY_HI]) & 0xFFFF) << 16 | (np.int64(g[SKEY_LO]) & 0xFFFF)
    return PICK[_suit_order(key, s, q), g[HAND + MAXR * s + q] & 15, k]


@njit(**JIT)
def _recompute_top_alive(g, R):
    t = R - 1
    while t >= 0 and g[GONE + t] == 4:
        t -= 1
    g[TOPA] = t


@njit(types.none(_ROW, _EV, types.int64, types.int64), **JIT)
def _out(g, ev, s, reason):
    if reason == OUT_EMPTIED:
        place = g[NTOP]
        g[NTOP] = place + 1
    else:
        place = g[NBOT]
        g[NBOT] = place - 1
    g[PL + s] = place
    g[ACTIVE] -= 1
    _ev(g, ev, EV_OUT, s, place, reason)


@njit(**JIT)
def _reveal_only_top(g, ev, s, top):
    """A hand of top-rank cards only can never go out: shown, out of play, ranked from below."""
    h = HAND + MAXR * s + top
    cards = g[h]
    g[REV + s] = cards
    g[GONE + top] += POP[cards]
    g[h] = 0
    g[SZ + s] = 0
    _out(g, ev, s, OUT_ONLY_TOP)


@njit(**JIT)
def _auto_give(g, ev, giver, taker, count, R):
    """The giver hands over its ``count`` highest cards (by rank; within a rank, in its suit
    order)."""
    row = _ev(g, ev, EV_EXCHANGE, giver, taker, 0)
    hg, ht = HAND + MAXR * giver, HAND + MAXR * taker
    total = 0
    for q in range(R - 1, -1, -1):
        if count == 0:
            break
        m = g[hg + q]
        if m:
            k = min(count, POP[m])
            sub = _chosen(g, giver, q, k)
            g[hg + q] ^= sub
            g[ht + q] |= sub
            g[GIVEN + MAXR * giver + q] |= sub
            g[RECV + MAXR * taker + q] |= sub
            if row >= 0:
                ev[row, EV_DATA + q] = sub
            count -= k
            total += k
    g[SZ + giver] -= total
    g[SZ + taker] += total


@njit(**JIT)
def _run_tasks(g, C, ev):
    """Runs the round's set-up until a decision is due or the play begins.

    Tasks: 0/1 take and lay of the 3rd place, 2/3 of the 4th, 4/5 the President exchange
    (automatic part, return), 6/7 the Vice exchange, 8 play. Returns 1 when the round is over
    before any play (only through top-rank-only hands)."""
    n, R = C[C_N], C[C_R]
    while True:
        t = g[TASK]
        if t == 0 or t == 2:
            place = 3 if t == 0 else 4
            any_up = False
            for q in range(R):
                if g[FUP + q]:
                    any_up = True
            if not g[SWAP] or place > n or not any_up:
                g[TASK] = t + 2
                continue
            g[PH] = TAKE
            g[CUR] = _prev_holder(g, place, n)
            return 0
        if t == 1 or t == 3:
            g[PH] = LAY
            g[CUR] = _prev_holder(g, 3 if t == 1 else 4, n)
            return 0
        if t == 4 or t == 6:
            c = C[C_PEX] if t == 4 else C[C_VEX]
            if c == 0:
                g[TASK] = t + 2
                continue
            if t == 4:
                giver, taker = _prev_holder(g, n, n), _prev_holder(g, 1, n)
            else:
                giver, taker = _prev_holder(g, n - 1, n), _prev_holder(g, 2, n)
            _auto_give(g, ev, giver, taker, c, R)
            g[TASK] = t + 1
            g[PH] = GIVE
            g[CUR] = taker
            g[GIVETO] = giver
            g[TOGIVE] = c
            for q in range(R):
                g[GBUF + q] = 0
            return 0
        # the play begins
        g[PH] = PLAY
        if C[C_NOFIN]:
            top = C[C_TOP]
            lead = g[LEAD]
            for i in range(n):
                s = lead + i
                if s >= n:
                    s -= n
                if g[SZ + s] and POP[g[HAND + MAXR * s + top]] == g[SZ + s]:
                    _reveal_only_top(g, ev, s, top)
                    if g[ACTIVE] == 1:
                        return 1
            _recompute_top_alive(g, R)
        if g[ACTIVE] == 1:
            return 1
        lead = g[LEAD]
        g[CUR] = lead if g[SZ + lead] else _next_active(g, lead, n)
        return 0


@njit(**JIT)
def _give_one(g, C, ev, q):
    s, t = g[CUR], g[GIVETO]
    m = _chosen(g, s, q, 1)
    g[HAND + MAXR * s + q] ^= m
    g[HAND + MAXR * t + q] |= m
    g[SZ + s] -= 1
    g[SZ + t] += 1
    g[GIVEN + MAXR * s + q] |= m
    g[RECV + MAXR * t + q] |= m
    g[GBUF + q] |= m
    g[TOGIVE] -= 1
    if g[TOGIVE]:
        return 0
    row = _ev(g, ev, EV_EXCHANGE, s, t, 0)
    if row >= 0:
        for r in range(C[C_R]):
            ev[row, EV_DATA + r] = g[GBUF + r]
    g[GIVETO] = -1
    g[TASK] += 1
    return _run_tasks(g, C, ev)


@njit(**JIT)
def _take(g, C, ev, q):
    s = g[CUR]
    m = LOWK[g[FUP + q], 1]
    g[FUP + q] ^= m
    g[GONE + q] -= 1
    g[HAND + MAXR * s + q] |= m
    g[SZ + s] += 1
    g[RECV + MAXR * s + q] |= m
    g[TAKEQ] = q
    g[TAKEM] = m
    _recompute_top_alive(g, C[C_R])
    g[TASK] += 1
    return _run_tasks(g, C, ev)


@njit(**JIT)
def _lay(g, C, ev, q):
    s = g[CUR]
    m = _chosen(g, s, q, 1)
    g[HAND + MAXR * s + q] ^= m
    g[SZ + s] -= 1
    g[FDOWN + q] |= m
    g[GIVEN + MAXR * s + q] |= m
    row = _ev(g, ev, EV_SWAP, s, g[TAKEQ], g[TAKEM])
    if row >= 0:
        ev[row, EV_DATA] = q
        ev[row, EV_DATA + 1] = m
    g[TASK] += 1
    return _run_tasks(g, C, ev)


@njit(**JIT)
def _deal(g, r, C, ev, start):
    """Shuffles and deals from ``start``; the rest lies face down."""
    n, R = C[C_N], C[C_R]
    for i in range(n):
        for q in range(R):
            g[HAND + MAXR * i + q] = 0
            g[GIVEN + MAXR * i + q] = 0
            g[RECV + MAXR * i + q] = 0
        g[SZ + i] = 0
        g[PSD + i] = 0
        g[PL + i] = 0
        g[REV + i] = 0
    for q in range(R):
        g[FDOWN + q] = 0
        g[FUP + q] = 0
        g[GONE + q] = 0
        g[PLAYED + q] = 0
        g[GBUF + q] = 0
    deck, dealt = C[C_DECK], C[C_DEALT]
    permutation(r, g, PERM, deck)
    s = start
    for i in range(deck):
        c = g[PERM + i]
        if i < dealt:
            g[HAND + MAXR * s + (c >> 2)] |= 1 << (c & 3)
            g[SZ + s] += 1
            s += 1
            if s == n:
                s = 0
        else:
            g[FDOWN + (c >> 2)] |= 1 << (c & 3)


@njit(**JIT)
def _lowest_card_holder(g, n, R):
    """The holder of the lowest club or, if it lies aside, of the lowest dealt card."""
    for i in range(n):
        if g[HAND + MAXR * i] & 1:
            return i
    best, leader = 1 << 30, -1
    for i in range(n):
        for q in range(R):
            m = g[HAND + MAXR * i + q]
            if m:
                key = 4 * q + LOWSUIT[m]
                if key < best:
                    best, leader = key, i
                break
    return leader


@njit(**JIT)
def _start_round(g, r, C, ev):
    """Deals the next round and runs its set-up; returns 1 if it ended at once."""
    n, R = C[C_N], C[C_R]
    g[ROUND] += 1
    rnd = g[ROUND]
    key = _round_suit_key(np.int64(r[MSEED] & _M32), np.int64(r[MIDX] & _M32), np.int64(rnd))
    g[SKEY_HI] = key >> 16  # int16 columns: read back with & 0xFFFF
    g[SKEY_LO] = key & 0xFFFF
    if rnd > 1:
        leader = _prev_holder(g, n, n)
    elif C[C_ROTATE]:
        leader = np.int64(r[MIDX] % np.uint64(n))
    else:
        leader = -1  # the lowest club's holder, known after the deal
    _deal(g, r, C, ev, leader if leader >= 0 else 0)
    if leader < 0:
        leader = _lowest_card_holder(g, n, R)
    g[LEAD] = leader
    g[NTOP] = 1
    g[NBOT] = n
    g[ACTIVE] = n
    g[TR] = -1
    g[TC] = 0
    g[TS] = -1
    g[PASSES] = 0
    g[TOGIVE] = 0
    g[GIVETO] = -1
    g[TAKEQ] = -1
    g[TAKEM] = 0
    if _ev(g, ev, EV_ROUND, rnd, leader, 0) >= 0:
        for i in range(n):
            row = _ev(g, ev, EV_HAND, i, 0, 0)
            if row >= 0:
                for q in range(R):
                    ev[row, EV_DATA + q] = g[HAND + MAXR * i + q]
        row = _ev(g, ev, EV_LEFTOVER, 0, 0, 0)
        if row >= 0:
            for q in range(R):
                ev[row, EV_DATA + q] = g[FDOWN + q]
    g[SWAP] = 0
    g[TASK] = 8 if rnd == 1 else 4
    if rnd > 1 and C[C_SWAP]:
        any_down = False
        for q in range(R):
            if g[FDOWN + q]:
                any_down = True
        if any_down:
            g[SWAP] = 1
            g[TASK] = 0
            for q in range(R):
                g[FUP + q] = g[FDOWN + q]
                g[GONE + q] = POP[g[FDOWN + q]]
                g[FDOWN + q] = 0
    _recompute_top_alive(g, R)
    return _run_tasks(g, C, ev)


@njit(**JIT)
def _new_match(g, r, C, ev, index):
    r[MIDX] = index
    g[ROUND] = 0
    for i in range(C[C_N]):
        g[TOT + i] = 0
        g[PPL + i] = 0
    seed = series_seed(r, r[GSEED], index)
    r[MSEED] = seed
    pcg_seed(r, seed)
    _ev(g, ev, EV_MATCH, index, seed, 0)


@njit(**JIT)
def _finish_round(g, C, ev, rew):
    """The last player's place, points, rewards; returns 1 when the match is over."""
    n = C[C_N]
    for i in range(n):
        if g[PL + i] == 0:
            _out(g, ev, i, OUT_LAST)
            break
    best = 0
    for i in range(n):
        p = g[PL + i]
        g[TOT + i] += n - p
        g[PPL + i] = p
        if C[C_REWPTS]:
            rew[i] += np.float32(n - p)
        else:
            rew[i] += np.float32(1.0 - 2.0 * (p - 1) / (n - 1))
        best = max(best, g[TOT + i])
    row = _ev(g, ev, EV_ROUND_END, g[ROUND], 0, 0)
    if row >= 0:
        for i in range(n):
            ev[row, EV_DATA + i] = g[PL + i]
            ev[row, EV_DATA + 6 + i] = g[TOT + i]
    if C[C_ROUNDS] > 0:
        over = g[ROUND] >= C[C_ROUNDS]
    else:
        over = best >= C[C_TARGET]
    if not over:
        return 0
    for i in range(n):
        g[LTOT + i] = g[TOT + i]
        if C[C_WINPTS]:
            g[LWIN + i] = 1 if g[TOT + i] == best else 0
        else:
            g[LWIN + i] = 1 if g[PL + i] == 1 else 0
    row = _ev(g, ev, EV_MATCH_END, 0, 0, 0)
    if row >= 0:
        for i in range(n):
            ev[row, EV_DATA + i] = g[LTOT + i]
            ev[row, EV_DATA + 6 + i] = g[LWIN + i]
    return 1
