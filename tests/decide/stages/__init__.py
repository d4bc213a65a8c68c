"""Tests of kuuki.decide.stages."""
