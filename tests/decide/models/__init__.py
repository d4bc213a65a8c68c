"""Tests of kuuki.decide.models."""
