"""Tests of kuuki.decide.judge."""
