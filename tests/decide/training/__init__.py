"""Tests of kuuki.decide.training."""
