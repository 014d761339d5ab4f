"""Evaluation: metrics, judges and the harness behind `assistant eval`."""
