"""Plumbing every process shares: structured logs, one metrics registry, health endpoints."""
