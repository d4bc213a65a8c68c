"""The judge's parts: the `Judge` port (``base``), the LLM calls (``llm_stage``) and their
cache, the conversation state, the intervention policy and history, and building the
judge for `build_app` (``build``)."""
