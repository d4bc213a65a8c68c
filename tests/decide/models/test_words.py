"""Every feature the models can name in a trace is told in words."""

from kuuki.decide.models.features import ADDRESSEE_FEATURES
from kuuki.decide.models.seat import SEAT_FEATURES
from kuuki.decide.models.words import words


def test_every_feature_has_words() -> None:
    raw = [f for f in (*ADDRESSEE_FEATURES, *SEAT_FEATURES) if words(f) == f]
    assert raw == []
    assert words("name_lead") == "name at the start"
    assert words("crowded_prev_is") == "spoke just before (busy channel)"
    assert words("pat_aca") == "turns the author → them → the author"
    # the patterns of a channel where the author has been alone say so, not "nobody → nobody"
    assert words("pat_---") == "nothing said before it"
    assert words("pat_aa-") == words("pat_a--") == "only the author here"
    assert words("crowded_pat_---") == "nothing said before it (busy channel)"
