"""Statistics of tournaments: means with honest confidence intervals, paired differences and
OpenSkill ratings.

A tournament's observations are not independent: the games of one deal (all its seat
rotations) share the cards. So every interval here is computed over **blocks**, one number per
block (a bot's mean over all its games of that deal), with Student's t at ``n_blocks - 1``
degrees of freedom. A paired difference of two bots is the per-block difference of their block
means: the card luck both bots saw cancels inside the block, which is what makes duplicate
tournaments need far fewer deals than plain random seating.

Student's t comes from scipy.special, the ratings from openskill.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Sequence


# -- Student's t ------------------------------------------------------------------------------

def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (e.g. ``t_quantile(0.975, 4) == 2.776...``).

    Raises:
        ValueError: ``p`` not in (0, 1) or ``df`` not positive.
    """
    # scipy.stats' t calls these same functions; importing scipy.stats takes half a second more
    from scipy.special import stdtrit

    if not 0.0 < p < 1.0:
        raise ValueError(f"p={p}: must lie strictly between 0 and 1")
    if df <= 0:
        raise ValueError(f"df={df}: must be positive")
    return float(stdtrit(df, p))


# -- estimates --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Estimate:
    """A mean over independent blocks with its confidence interval.

    ``low``/``high``/``half_width`` are ``None`` with fewer than two blocks (no variance can be
    estimated from one block). ``half_width`` is Student's; ``low``/``high`` are cut to the
    range the values can take, where it is known (a rate's interval never reaches below 0%).
    """

    mean: float
    low: float | None
    high: float | None
    half_width: float | None
    sd: float | None
    n: int
    level: float = 0.95

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def cut(self) -> bool:
        """Whether the interval was cut at the end of the values' range (it is then not
        ``mean ± half_width``)."""
        return (self.half_width is not None
                and (self.low > self.mean - self.half_width
                     or self.high < self.mean + self.half_width))

    def text(self, digits: int = 3) -> str:
        """``0.512 ± 0.031``, ``0.012 [0.000, 0.043]`` where the interval was cut at the
        values' range, ``0.512 ± ?`` without an interval (one block), or ``0.512 (all alike)``
        when every block gave the same value (an interval of width 0, which no few blocks make
        certain)."""
        return self.format(lambda v: f"{v:.{digits}f}")

    def format(self, number: Callable[[float], str]) -> str:
        """:meth:`text` with each figure written by ``number`` (e.g. as a percentage)."""
        mean = number(self.mean)
        if self.half_width is None:
            return f"{mean} ± ?"
        if self.sd == 0.0:
            return f"{mean} (all alike)"
        if self.cut:
            return f"{mean} [{number(self.low)}, {number(self.high)}]"
        return f"{mean} ± {number(self.half_width)}"


def mean_ci(values: Sequence[float], level: float = 0.95,
            bounds: tuple[float, float] | None = None) -> Estimate:
    """Mean of ``values`` (one per independent block) with a Student-t interval.

    ``bounds`` is the range every value lies in, where one is known (``(0, 1)`` for a rate):
    the interval is cut to it, since no mean of such values lies outside it.

    Raises:
        ValueError: no values, or ``level`` not in (0, 1).
    """
    n = len(values)
    if n == 0:
        raise ValueError("mean_ci: no values (at least one block is needed)")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level={level}: must lie strictly between 0 and 1")
    mean = math.fsum(values) / n
    if n < 2:
        return Estimate(mean, None, None, None, None, n, level)
    # equal values have no spread, which their rounded mean would turn into a tiny one
    var = (0.0 if min(values) == max(values)
           else math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    sd = math.sqrt(var)
    half = t_quantile(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Estimate(mean, low, high, half, sd, n, level)


def paired_diff(a: Sequence[float], b: Sequence[float], level: float = 0.95,
                bounds: tuple[float, float] | None = None) -> Estimate:
    """Mean of ``a[i] - b[i]`` (two bots' block means on the same blocks) with its interval.

    ``bounds`` is the range of the values of ``a`` and ``b``; the differences lie in
    ``(low - high, high - low)``.

    Raises:
        ValueError: the sequences differ in length or are empty.
    """
    if len(a) != len(b):
        raise ValueError(f"paired_diff: {len(a)} and {len(b)} values; pairs need equal lengths")
    spread = None if bounds is None else (bounds[0] - bounds[1], bounds[1] - bounds[0])
    return mean_ci([x - y for x, y in zip(a, b)], level, spread)


def two_sided_p(e: Estimate) -> float | None:
    """The two-sided p-value of Student's t test that ``e``'s mean is 0, or None where it has
    no interval (one block, or every block alike)."""
    from scipy.special import stdtr

    if e.half_width is None or not e.sd:
        return None
    return float(2.0 * stdtr(e.n - 1, -abs(e.mean) / (e.sd / math.sqrt(e.n))))


def holm_significant(estimates: Sequence[Estimate], level: float = 0.95) -> list[bool]:
    """Which of several differences are significant at ``1 - level`` together: Holm's
    step-down correction over those that can be tested. Marking each difference whose own
    interval excludes 0 finds one among six equal bots' pairs in about a fifth of
    tournaments; this keeps that chance at ``1 - level``. With one difference it is its
    interval's verdict."""
    alpha = 1.0 - level
    tested = [(p, i) for i, p in enumerate(map(two_sided_p, estimates)) if p is not None]
    out = [False] * len(estimates)
    for k, (p, i) in enumerate(sorted(tested)):
        if p > alpha / (len(tested) - k):
            break
        out[i] = True
    return out


# -- OpenSkill --------------------------------------------------------------------------------

def openskill_ratings(games: Iterable[tuple[Sequence[int], Sequence[int]]], num_bots: int
                      ) -> list[dict]:
    """Plackett-Luce ratings of bots from finishing orders, processed in the given order.

    An online rating, for ranking bots, not a measure of precision: it depends on the order
    of the games, and its ``sigma`` does not shrink with more of them (openskill's drift
    ``tau`` keeps it near 1.6); the intervals of :func:`mean_ci` are the precision.

    Args:
        games: per round, ``(bot index per seat, place per seat)``; places from 1.
        num_bots: bots are ``0..num_bots-1``.

    Returns:
        Per bot ``{"mu", "sigma", "ordinal", "rounds"}``; ``ordinal`` is ``mu - 3 sigma``,
        ``rounds`` the rounds the bot was rated on (a session's game has several).

    Several copies of one bot at a table (a candidate against copies of a field bot) are rated
    as one player: each copy is updated from the bot's rating before the round, then the bot's
    ``mu`` moves by the sum of the copies' changes and its ``sigma`` shrinks by the product of
    their ratios, as if the copies' results had been taken in one after another.
    """
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    mu = [model.mu] * num_bots
    sigma = [model.sigma] * num_bots
    count = [0] * num_bots
    for bots, places in games:
        teams = [[model.rating(mu=mu[b], sigma=sigma[b])] for b in bots]
        out = model.rate(teams, ranks=list(places))
        dmu = [0.0] * num_bots
        ratio = [1.0] * num_bots
        for b, team in zip(bots, out):
            dmu[b] += team[0].mu - mu[b]
            ratio[b] *= team[0].sigma / sigma[b]
        for b in set(bots):
            mu[b] += dmu[b]
            sigma[b] *= ratio[b]
            count[b] += 1
    return [{"mu": mu[b], "sigma": sigma[b], "ordinal": mu[b] - 3.0 * sigma[b],
             "rounds": count[b]} for b in range(num_bots)]


__all__ = ["Estimate", "holm_significant", "mean_ci", "openskill_ratings", "paired_diff",
           "t_quantile", "two_sided_p"]
