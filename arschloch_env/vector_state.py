"""The state layout of the batched engine: columns of a game's int16 row, the config vector,
record event codes and card tables (shared by :mod:`arschloch_env.vector_kernels`,
:mod:`arschloch_env.vector_obs` and :mod:`arschloch_env.vector`).

A row is sized for the largest table (6 seats, 13 ranks) so that every column is a constant;
a hand is one 4-bit suit mask per rank (bit ``s`` = suit ``C S H D``), as in the reference.
Rows are int16 (every value fits: totals at most 1000 rounds * 5 points, at most 32767
recorded games), which halves the memory a step touches; the match index, which grows without
bound, lives in the game's stream row (:mod:`arschloch_env.vector_rng`).
"""

from __future__ import annotations

import numpy as np

from arschloch_env import cards

STATE_DTYPE = np.int16
MAX_RECORDED = 32767
MAXN, MAXR = 6, 13

# phases, in the observation's order; a finished match restarts at once, so "over" never shows
PLAY, GIVE, TAKE, LAY = 0, 1, 2, 3
PHASE_NAMES = ("play", "give", "take", "lay")

# scalars: phase, seat to act, round leader, table (rank, count, seat), passes since the last
# play, seats holding cards, next place from the top / bottom, highest rank in play, cards
# still to give and to whom, round, set-up task, swap on, the card taken in the swap (rank,
# mask), record slot (-1: not recorded), record events this step, the round's 32-bit suit key
# (cards.round_suit_key) as its high and low 16 bits
(PH, CUR, LEAD, TR, TC, TS, PASSES, ACTIVE, NTOP, NBOT, TOPA, TOGIVE, GIVETO, ROUND, TASK,
 SWAP, TAKEQ, TAKEM, SLOT, EVN, SKEY_HI, SKEY_LO) = range(22)
# per seat (MAXN columns each): cards held, passed, place (0: none), previous round's place,
# match total, revealed top-rank cards, the last finished match's totals and winners
SZ = 24
PSD = SZ + MAXN
PL = PSD + MAXN
PPL = PL + MAXN
TOT = PPL + MAXN
REV = TOT + MAXN
LTOT = REV + MAXN
LWIN = LTOT + MAXN
# per rank (MAXR columns each): face-down and face-up left-over masks, gone and played
# counts, the cards returned so far in a give phase
FDOWN = LWIN + MAXN
FUP = FDOWN + MAXR
GONE = FUP + MAXR
PLAYED = GONE + MAXR
GBUF = PLAYED + MAXR
# per seat and rank (MAXN * MAXR each, seat-major): hands, cards given, cards received
HAND = GBUF + MAXR
GIVEN = HAND + MAXN * MAXR
RECV = GIVEN + MAXN * MAXR
# scratch of the shuffle
PERM = RECV + MAXN * MAXR
WIDTH = PERM + 4 * MAXR

# the config vector (int64): rules, sizes, title index per place, observation offsets
(C_N, C_R, C_TOP, C_NOFIN, C_TOPEND, C_ROTATE, C_DEALT, C_DECK, C_SWAP, C_PEX, C_VEX, C_ROUNDS,
 C_TARGET, C_WINPTS, C_REWPTS, C_D, C_SD) = range(17)
C_TITLE = 17
OBS_SLICES = ("hand", "played", "face_up", "revealed", "highest_in_play", "table_rank",
              "table_count", "table_seat", "leading", "given", "received", "phase", "to_give",
              "match_progress", "seat_present", "seat_held", "seat_out", "seat_passed",
              "seat_place", "seat_title", "seat_total", "unseen", "opp_most", "beat_most",
              "own_dominant", "open_groups", "threat", "all_hands", "face_down")
C_OFF = C_TITLE + MAXN
(O_HAND, O_PLAYED, O_FUP, O_REV, O_HIP, O_TR, O_TC, O_TS, O_LEAD, O_GIVEN, O_RECV, O_PHASE,
 O_TOGIVE, O_PROG, O_PRESENT, O_HELD, O_OUT, O_PASSED, O_PLACE, O_TITLE, O_TOTAL, O_UNSEEN,
 O_OPPM, O_BEAT, O_OWND, O_OPEN, O_THREAT, O_ALLH, O_FDOWN) = range(C_OFF,
                                                                   C_OFF + len(OBS_SLICES))
C_SIZE = C_OFF + len(OBS_SLICES)

# record events: int64 rows [type, a, b, c, data...]
EV_WIDTH = 18
EV_DATA = 4
(EV_MATCH, EV_ROUND, EV_HAND, EV_LEFTOVER, EV_SWAP, EV_EXCHANGE, EV_PLAY, EV_PASS, EV_TRICK,
 EV_OUT, EV_ROUND_END, EV_MATCH_END) = range(1, 13)
OUT_EMPTIED, OUT_ONLY_TOP, OUT_LAST = 0, 1, 2
OUT_REASONS = ("emptied", "only_top", "last")


def _suits(m: int) -> list[int]:
    return [s for s in range(4) if m >> s & 1]


POP = np.array([len(_suits(m)) for m in range(16)], dtype=np.int64)
# the k lowest suits of mask m, and the first k in each suit order (arschloch_env.cards)
LOWK = np.array([[sum(1 << s for s in _suits(m)[:k]) for k in range(5)] for m in range(16)],
                dtype=np.int64)
PICK = np.array(cards.PICK, dtype=np.int64)
LOWSUIT = np.array([(_suits(m) or [4])[0] for m in range(16)], dtype=np.int64)
