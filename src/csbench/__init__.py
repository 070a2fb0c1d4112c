"""csbench: build, audit and score commonsense-reasoning benchmarks."""

__version__ = "0.1.0"
