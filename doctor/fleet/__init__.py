"""Offline analysis across snapshots: before/after diff, fleet outliers and known-good baselines.

Modules here import only the standard library and ``doctor`` at import time (they are loaded each
time ``gnd`` starts); the work happens inside the functions.
"""
