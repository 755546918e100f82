"""Test doubles: the fake LLM server, the fake web site, process helpers, GatedProvider."""
