"""Statistics of tournaments: Student-t intervals over blocks, paired differences, OpenSkill."""

import math

import pytest

from train.stats import (
    holm_significant, mean_ci, openskill_ratings, paired_diff, t_quantile, two_sided_p,
)

# Two-sided 95% critical values of Student's t, from the standard tables.
T975 = {1: 12.706205, 2: 4.302653, 4: 2.776445, 10: 2.228139, 30: 2.042272, 120: 1.979930}


@pytest.mark.parametrize("df,value", sorted(T975.items()))
def test_t_quantile_matches_the_tables(df, value):
    assert t_quantile(0.975, df) == pytest.approx(value, abs=1e-6)
    assert t_quantile(0.025, df) == pytest.approx(-value, abs=1e-6)


def test_t_tends_to_the_normal():
    assert t_quantile(0.975, 1e6) == pytest.approx(1.959964, abs=1e-5)
    assert t_quantile(0.5, 3) == pytest.approx(0.0, abs=1e-12)  # scipy 1.11: 7e-17
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)


def test_mean_ci_of_one_to_five_by_hand():
    # mean 3, sample variance 2.5, standard error sqrt(2.5 / 5), t(0.975, 4) = 2.776445
    e = mean_ci([1, 2, 3, 4, 5])
    assert e.mean == 3.0 and e.n == 5
    assert e.sd == pytest.approx(math.sqrt(2.5))
    assert e.half_width == pytest.approx(2.776445105 * math.sqrt(0.5), abs=1e-8)
    assert (e.low, e.high) == pytest.approx((3 - e.half_width, 3 + e.half_width))
    assert e.text(2) == "3.00 ± 1.96"


def test_paired_difference_by_hand():
    # differences 1, 0, 2: mean 1, sd 1, half width t(0.975, 2) / sqrt(3)
    e = paired_diff([1, 2, 3], [0, 2, 1])
    assert e.mean == 1.0
    assert e.half_width == pytest.approx(4.302652730 / math.sqrt(3), abs=1e-8)


def test_p_value_agrees_with_the_interval():
    """p < 5% exactly where the 95% interval excludes 0; none without an interval."""
    e = mean_ci([1, 2, 3, 4, 5])  # t = 3 / sqrt(0.5) = 4.243 at 4 df
    assert two_sided_p(e) == pytest.approx(0.01324, abs=1e-5)
    for values in ([0.1, 0.2, -0.1, 0.3], [0.5, 0.6, 0.4, 0.55], [-1, 1, -1, 2, 0.1]):
        e = mean_ci(values)
        assert (two_sided_p(e) < 0.05) == (e.low > 0 or e.high < 0)
    assert two_sided_p(mean_ci([0.7])) is None and two_sided_p(mean_ci([1, 1, 1])) is None


def test_holm_marks_fewer_differences_than_their_own_intervals():
    """Holm's step-down: the smallest p against alpha / m, the next against alpha / (m - 1)
    ..., stopping at the first that fails; one difference is its interval's verdict."""
    p = {"a": mean_ci([0.5, 0.6, 0.4, 0.55, 0.45, 0.5]),       # p far below 0.05 / 3
         "b": mean_ci([0.3, -0.1, 0.4, 0.2, 0.5, 0.1]),        # p about 0.03: < 0.05 alone
         "c": mean_ci([0.1, -0.2, 0.3, -0.1, 0.2, -0.3])}      # p far above
    assert two_sided_p(p["a"]) < 0.05 / 3 and 0.025 < two_sided_p(p["b"]) < 0.05
    assert holm_significant([p["a"], p["b"], p["c"]]) == [True, False, False]
    # the second b would pass alpha / 1 on its own: only the stop at the first b keeps it out
    assert holm_significant([p["a"], p["b"], p["b"]]) == [True, False, False]
    assert holm_significant([p["b"]]) == [True]
    assert holm_significant([p["b"], mean_ci([0.7])]) == [True, False]  # one tested pair
    assert holm_significant([]) == []


def test_degenerate_inputs():
    one = mean_ci([0.7])
    assert one.mean == 0.7 and one.low is None and one.half_width is None
    assert one.text() == "0.700 ± ?"
    flat = mean_ci([0.5] * 4)
    assert flat.half_width == 0.0 and flat.low == flat.high == 0.5
    # equal values that their mean does not hold exactly: still no spread
    third = mean_ci([1 / 9] * 5)
    assert third.sd == 0.0 and third.low == third.high == third.mean
    with pytest.raises(ValueError, match="no values"):
        mean_ci([])
    with pytest.raises(ValueError, match="equal lengths"):
        paired_diff([1, 2], [1])
    with pytest.raises(ValueError, match="level"):
        mean_ci([1, 2], level=1.5)


def test_openskill_orders_bots_and_rates_copies_as_one_player():
    # bot 0 always first against three copies of bot 1
    games = [((0, 1, 1, 1), (1, 2, 3, 4)), ((1, 0, 1, 1), (2, 1, 3, 4))] * 20
    r = openskill_ratings(games, 2)
    assert r[0]["mu"] > 25 > r[1]["mu"]
    assert r[0]["rounds"] == r[1]["rounds"] == 40
    assert r[0]["ordinal"] == pytest.approx(r[0]["mu"] - 3 * r[0]["sigma"])
    assert openskill_ratings(games, 2) == r  # deterministic
    # with distinct bots the loser of every game ends lowest
    r3 = openskill_ratings([((0, 1, 2), (2, 1, 3))] * 10, 3)
    assert r3[1]["mu"] > r3[0]["mu"] > r3[2]["mu"]


def test_openskill_of_one_round_is_plackett_luce_with_the_copies_summed():
    """As the docstring says: distinct bots get exactly the model's update; copies of one
    bot add their mu changes and multiply their sigma ratios."""
    from openskill.models import PlackettLuce
    model = PlackettLuce()
    fresh = [[model.rating()] for _ in range(4)]
    out = model.rate(fresh, ranks=[2, 1, 4, 3])
    r = openskill_ratings([((0, 1, 2, 3), (2, 1, 4, 3))], 4)
    assert [x["mu"] for x in r] == pytest.approx([t[0].mu for t in out])
    assert [x["sigma"] for x in r] == pytest.approx([t[0].sigma for t in out])
    r = openskill_ratings([((0, 1, 1, 1), (2, 1, 4, 3))], 2)
    copies = out[1:]
    assert r[0]["mu"] == pytest.approx(out[0][0].mu)
    assert r[1]["mu"] == pytest.approx(model.mu + sum(t[0].mu - model.mu for t in copies))
    assert r[1]["sigma"] == pytest.approx(
        model.sigma * math.prod(t[0].sigma / model.sigma for t in copies))


def test_an_interval_is_cut_to_the_range_of_its_values():
    # one President in ten deals: Student's interval reaches below 0%, no rate can
    e = mean_ci([1] + [0] * 9, bounds=(0, 1))
    assert e.low == 0.0 and e.high == pytest.approx(0.1 + e.half_width)
    assert e.cut and e.text(2) == f"0.10 [0.00, {e.high:.2f}]"
    assert not mean_ci([1, 0] * 5, bounds=(0, 1)).cut
    assert mean_ci([1, 0] * 5, bounds=(0, 1)).text(2).startswith("0.50 ± ")
    # differences of two rates lie in [-1, 1]
    d = paired_diff([1, 1, 1, 0], [0, 0, 0, 0], bounds=(0, 1))
    assert d.high == 1.0 and d.low == pytest.approx(0.75 - d.half_width)
