"""Skillhive gateway, persistence, tenancy and dispatch."""
