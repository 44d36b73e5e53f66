"""Sandboxes: isolated machines with a writable tree, a persistent shell and limits."""
