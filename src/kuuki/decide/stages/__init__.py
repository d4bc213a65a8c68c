"""The stages of the decision, one module each, in the order `build_pipeline` runs them:
own_message, filter, sent_twice, quiet_request, quiet (the gates); channel_policy, addressee,
ping_burst, answered, recheck, local_score, rate_limit, addressed, debounce, thresholds, policy,
llm_judge, proactive, form. A `judge` stage replaces all after the gates when a whole
`Judge` is given."""
