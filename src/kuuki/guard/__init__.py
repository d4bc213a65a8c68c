"""The output guard: every model output is checked here before it is posted or stored."""
