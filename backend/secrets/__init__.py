"""User secrets: encrypted at rest, never returned, logged or echoed."""
