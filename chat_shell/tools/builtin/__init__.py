"""Tools every turn may have regardless of skills."""
