"""Helpers shared by the tests: experiment folders, a fake scheduler for fault injection, the
folder invariants and captured scheduler output."""
