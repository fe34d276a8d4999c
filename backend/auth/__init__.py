"""Users, API tokens and authentication."""
