"""Test doubles. They live only under tests/ and are never imported by the product."""
