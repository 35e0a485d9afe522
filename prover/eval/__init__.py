"""Batch evaluation."""
