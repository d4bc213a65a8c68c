"""The learned models' feature names in words, for traces people read (`kuuki why`, the
playground's card): "room_author_new" means nothing to the person who runs the bot."""

from __future__ import annotations

_WORDS = {
    # the addressee model, per candidate
    "name": "named", "name_call": "called by name", "name_lead": "name at the start",
    "name_end": "name at the end", "name_ref": "named in passing", "mentioned": "@-mentioned",
    "parent_is": "a reply to them", "parent_other": "a reply to someone else",
    "prev_is": "spoke just before", "last_other_is": "the last other speaker",
    "since": "turns since they spoke", "never": "has not spoken here", "share": "their share",
    "asked": "they asked something", "asked_answer": "answers their question",
    "named_author": "they named the author", "author_named_it": "the author named them",
    "author_prev_to": "the author spoke to them before",
    "author_prev_to_adjacent": "the author just spoke to them",
    "its_prev_to_author": "they spoke to the author", "you_last_other": "'you' after them",
    "thanks_last_other": "thanks after them", "greeting_last_other": "a greeting after them",
    "question_last_other": "a question after them", "answer_last_other": "an answer after them",
    "gap": "time since they spoke", "gap_known": "times known",
    "overlap_last": "shares words with their last line",
    "overlap_recent": "shares words with their recent lines",
    "overlap_any": "shares words with what they said", "asked_any": "they asked a question",
    "exchanges": "exchanges with the author", "its_prev_to_third": "they spoke to a third",
    "asked_recent": "their recent question", "took_up_author": "they took up the author",
    "author_recent_to": "the author spoke to them lately",
    "author_window_to": "the author has been talking to them",
    "its_recent_to_author": "they spoke to the author lately",
    "register_theirs": "in their register (polite or plain)",
    "register_author_to": "in the register the author uses with them",
    "casual_theirs": "plain speech, as theirs",
    # what was said (kuuki.decide.models.content)
    "topic_last": "takes up their last line", "topic_recent": "takes up their recent lines",
    "topic_best": "closest to what they said", "their_question_topic": "takes up their question",
    "after_author_question": "they answered the author's question",
    "request_answered": "answers their request", "thanks_for_answer": "thanks them for an answer",
    "greeting_back": "greets them back",
    # the addressee model, the room's row
    "room": "the room", "room_greeting": "a greeting", "room_question": "a question",
    "room_no_name": "no one named", "room_live": "people around", "room_ts": "times known",
    "room_gap": "a pause before it", "room_author_prev": "the author spoke just before",
    "room_parent": "a reply", "room_author_new": "the author new here",
    "room_length": "its length", "room_you": "'you'", "room_thanks": "thanks",
    "room_answer": "an answer", "room_first": "the first line here",
    # the turn patterns of an author who has been talking alone (learn.lone)
    "pat_a--": "only the author here", "pat_aa-": "only the author here",
    "pat_---": "nothing said before it",
    # the boosted trees over the rows (kuuki.decide.models.trees)
    "trees": "how these cues combine (the trees)",
    # the seat model
    "bias": "base rate", "p_to": "said to the seat", "p_room": "said to the room",
    "p_other": "said to someone else", "to_is": "the seat is the addressee",
    "log_p_to": "said to the seat (log)", "question": "a question", "greeting": "a greeting",
    "thanks": "a thank-you", "you": "'you'", "live": "people around", "length": "its length",
    "author_streak": "the author's run of lines", "named_lead": "seat named at the start",
    "named": "seat named", "gap_prev": "a pause before it", "ts_known": "times known",
    "p_to_question": "a question to the seat", "p_room_question": "a question to the room",
    "p_room_greeting": "a greeting to the room",
}
_WHO = {"a": "the author", "c": "them", "o": "another", "-": "nobody"}


def words(feature: str) -> str:
    """A feature's name in words ("crowded_" and turn-taking patterns spelled out)."""
    if feature.startswith("crowded_"):
        return f"{words(feature.removeprefix('crowded_'))} (busy channel)"
    if feature.startswith("pat_") and len(feature) == 7 and feature not in _WORDS:
        return "turns " + " → ".join(_WHO.get(x, x) for x in feature[4:])
    return _WORDS.get(feature, feature)
