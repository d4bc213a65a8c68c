"""Tests of kuuki.decide.addressing."""
