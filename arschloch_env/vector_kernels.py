"""Numba kernels of the batched engine (:mod:`arschloch_env.vector`): the rules, written a
second time, independently of :mod:`arschloch_env.engine`, over arrays of many games.

Each game is one int16 row ``g`` of the state array (the columns of
:mod:`arschloch_env.vector_state`) and one uint64 row ``r`` of the stream array
(:mod:`arschloch_env.vector_rng`); a kernel loops over the games and runs plain scalar code on
the rows, which numba compiles to machine code. Functions take these 1-D rows (not the whole
batch) because numba passes array arguments by value: small rows keep the many calls cheap. The
rules follow RULES.md and the reference's resolutions: a seat moves its cards of a rank in its
own suit order for the rank that round (``arschloch_env.cards.suit_order``, the one piece of
code the two engines share, so that they draw the same orders; a face-up left-over card is taken
lowest suit first), the automatic exchange hands over the highest cards by rank, the left-over
swap (3rd, then 4th place) comes before the exchange, "still in play" counts played, face-up and
revealed cards. This module holds the trick play and the batch kernels;
:mod:`arschloch_env.vector_round` the round set-up and end, :mod:`arschloch_env.vector_obs` the
observation and mask. On the hot paths, seats and ranks are masked to their ranges (``& 7``,
``& 15``): no value changes, but the compiler can drop numba's negative-index wraparound on
every access.

Record events (for recorded games only) are int64 rows ``[type, a, b, c, data...]`` in the
game's slot of the event buffer ``ev``; :mod:`arschloch_env.vector` turns them into the JSON
events of INTERFACES.md.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from arschloch_env.vector_obs import (
    observe_seat, write_hidden, write_mask, write_obs, write_state,
)
from arschloch_env.vector_rng import JIT, MIDX, splitmix
from arschloch_env.vector_round import (
    _chosen, _ev, _finish_round, _give_one, _lay, _new_match, _next_active, _out,
    _reveal_only_top, _start_round, _take,
)
from arschloch_env.vector_state import (
    ACTIVE, C_N, C_NOFIN, C_R, C_TOP, C_TOPEND, CUR, EV_PASS, EV_PLAY, EV_TRICK, EVN, FUP,
    GIVE, GONE, HAND, LAY, MAXR, OUT_EMPTIED, PASSES, PH, PLAY, PLAYED, POP, PSD,
    SLOT, SZ, TAKE, TC, TOPA, TR, TS,
)


@njit(**JIT)
def _end_trick(g, ev, winner, n):
    _ev(g, ev, EV_TRICK, winner, 0, 0)
    g[TR] = -1
    g[TC] = 0
    g[TS] = -1
    g[PASSES] = 0
    for i in range(n):
        g[PSD + i] = 0
    g[CUR] = winner if g[SZ + winner] else _next_active(g, winner, n)


@njit(**JIT)
def _play(g, C, ev, r, k):
    """Returns 1 when the play ended the round (one player left holding cards)."""
    n, top = C[C_N] & 7, C[C_TOP] & 15
    s = g[CUR] & 7
    r &= 15
    k &= 7
    h = HAND + MAXR * s
    m = _chosen(g, s, r, k)
    g[h + r] ^= m
    g[SZ + s] -= k
    g[GONE + r] += k
    g[PLAYED + r] += k
    g[TR] = r
    g[TC] = k
    g[TS] = s
    g[PASSES] = 0
    for i in range(n):
        g[PSD + i] = 0
    _ev(g, ev, EV_PLAY, s, r, m)
    if g[SZ + s] == 0:
        _out(g, ev, s, OUT_EMPTIED)
    elif C[C_NOFIN] and POP[g[h + top] & 15] == g[SZ + s]:
        _reveal_only_top(g, ev, s, top)
    t = g[TOPA]
    while t >= 0 and g[GONE + (t & 15)] == 4:
        t -= 1
    g[TOPA] = t
    if g[ACTIVE] == 1:
        return 1
    if C[C_TOPEND] and r >= t:
        _end_trick(g, ev, s, n)
    else:
        g[CUR] = _next_active(g, s, n)
    return 0


@njit(**JIT)
def _pass(g, C, ev):
    n = C[C_N] & 7
    s = g[CUR] & 7
    g[PSD + s] = 1
    g[PASSES] += 1
    _ev(g, ev, EV_PASS, s, 0, 0)
    ts = g[TS] & 7
    others = g[ACTIVE] - (1 if g[SZ + ts] else 0)
    if g[PASSES] >= others:
        _end_trick(g, ev, ts, n)
    else:
        g[CUR] = _next_active(g, s, n)


@njit(**JIT)
def _only_pass(g, C):
    """The seat to act follows and has no play: passing is its only legal action."""
    k = g[TC]
    if g[PH] != PLAY or k == 0:
        return False
    s = g[CUR] & 7
    h = HAND + MAXR * s
    size = g[SZ + s]
    forbid = C[C_TOP] if C[C_NOFIN] else -1
    for r in range(g[TR] + 1, C[C_R] & 15):
        if POP[g[h + r] & 15] >= k and not (r == forbid and k == size):
            return False
    return True


@njit(**JIT)
def _settle(g, r, C, ev, status, rew):
    """After a transition: finishes rounds (and matches, starting the next one), then applies
    forced passes. Returns whether a match ended."""
    done = False
    while status == 1:
        if _finish_round(g, C, ev, rew):
            done = True
            _new_match(g, r, C, ev, np.int64(r[MIDX]) + 1)
        status = _start_round(g, r, C, ev)
    while _only_pass(g, C):
        _pass(g, C, ev)
    return done


@njit(**JIT)
def is_legal(g, C, a):
    """Whether action id ``a`` is legal in the game of row ``g`` now."""
    R = C[C_R] & 15
    if a < 0 or a > 6 * R:
        return False
    gbase = 1 + 4 * R
    tbase = 1 + 5 * R
    ph = g[PH]
    s = g[CUR] & 7
    if ph == PLAY:
        tc = g[TC]
        if a == 0:
            return tc > 0
        if a >= gbase:
            return False
        q = (a - 1) >> 2
        k = ((a - 1) & 3) + 1
        if POP[g[HAND + MAXR * s + (q & 15)] & 15] < k:
            return False
        if tc and (k != tc or q <= g[TR]):
            return False
        return not (C[C_NOFIN] and q == C[C_TOP] and k == g[SZ + s])
    if ph == GIVE or ph == LAY:
        return gbase <= a < tbase and g[HAND + MAXR * s + a - gbase] != 0
    return a >= tbase and g[FUP + a - tbase] != 0


@njit(**JIT)
def _apply(g, r, C, ev, a, rew):
    R = C[C_R]
    ph = g[PH]
    if ph == PLAY:
        if a == 0:
            _pass(g, C, ev)
            status = 0
        else:
            status = _play(g, C, ev, (a - 1) >> 2, ((a - 1) & 3) + 1)
    elif ph == GIVE:
        status = _give_one(g, C, ev, a - 1 - 4 * R)
    elif ph == TAKE:
        status = _take(g, C, ev, a - 1 - 5 * R)
    else:
        status = _lay(g, C, ev, a - 1 - 4 * R)
    return _settle(g, r, C, ev, status, rew)


# -- batch kernels ---------------------------------------------------------------------------

@njit(**JIT)
def first_illegal(st, C, actions, active):
    """The first active game whose action is illegal, or -1."""
    for b in range(actions.shape[0]):
        if active[b] and not is_legal(st[b], C, actions[b]):
            return b
    return -1


@njit(**JIT)
def reset_games(st, rng, C, EV, index, obs, mask, rew):
    """Starts match ``index[b]`` of every game's series (``rew``: scratch, stays zero)."""
    for b in range(st.shape[0]):
        g, r = st[b], rng[b]
        ev = EV[max(g[SLOT], 0)]
        g[EVN] = 0
        _new_match(g, r, C, ev, index[b])
        _settle(g, r, C, ev, _start_round(g, r, C, ev), rew[b])
        write_obs(g, C, obs[b])
        write_mask(g, C, mask[b])


@njit(**JIT)
def step_games(st, rng, C, EV, actions, active, obs, mask, rew, done):
    """Applies one (legal) action in every active game; writes the next observations, masks,
    rewards and done flags of every game (inactive ones unchanged). Releases the GIL: blocks
    of games can be stepped in threads."""
    for b in range(actions.shape[0]):
        g = st[b]
        ev = EV[max(g[SLOT], 0)]
        rb = rew[b]
        rb[:] = 0.0
        done[b] = _apply(g, rng[b], C, ev, actions[b], rb) if active[b] else False
        write_obs(g, C, obs[b])
        write_mask(g, C, mask[b])


@njit(**JIT)
def observe_seats(st, C, seats, out):
    for b in range(out.shape[0]):
        observe_seat(st[b], C, out[b], seats[b])


@njit(**JIT)
def states(st, C, out):
    for b in range(out.shape[0]):
        write_state(st[b], C, out[b])


@njit(**JIT)
def hidden_states(st, C, out):
    for b in range(out.shape[0]):
        write_hidden(st[b], C, out[b])


@njit(**JIT)
def sample_legal(mask, rng, out):
    """A uniformly random legal action per game, from the masks and the sampler streams."""
    A = mask.shape[1]
    for b in range(mask.shape[0]):
        cnt = 0
        for a in range(A):
            cnt += mask[b, a]
        u = (splitmix(rng[b]) >> np.uint64(11)) * np.uint64(cnt)
        k = np.int64(u >> np.uint64(53))
        for a in range(A):
            if mask[b, a]:
                if k == 0:
                    out[b] = a
                    break
                k -= 1
