"""Step 5, the decision: is this message for the bot, should it speak, and how.

Laid out by concept (docs/architecture.md has one line per stage):

- ``types``: the typed values the engine and the stages share (a `Case` in, a `Verdict`
  out, the `Situation`, `BotState` and `Addressing` they read). It imports only
  kuuki.domain and kuuki.ports, and it is all the engine imports from here: importing
  this package loads nothing else.
- ``pipeline``: the ordered list of stages, built once at start-up (`build_pipeline`).
- ``stages``: one module per stage, named for it.
- ``addressing``: who a message is for: names, mentions and replies (``names``), the
  learned models' reading of the room (``reading``), and addressed by context (``context``).
- ``models``: the learned addressee and seat models, their features and weights;
  ``training``: fitting and scoring them on real chats (`kuuki train`, `kuuki eval`).
- ``judge``: the LLM judge's parts (its calls, cache, conversation state, intervention
  history) and the `Judge` port; ``rules``, ``phrases``, ``tracking`` and
  ``response_type`` are what the local stages score with.
"""
