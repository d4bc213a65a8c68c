"""The language-model back-ends behind one registry, the scheduler and the breaker."""
