"""Contamination scans: find benchmark items in pretraining corpora (exact, n-gram, semantic)."""
