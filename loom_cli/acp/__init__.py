"""``loom acp``: Loom as an Agent Client Protocol agent (the SDK is imported only here)."""
