"""Benchmarks: ratios measured side by side in one run (DESIGN.md §8)."""
