"""Shipped recovery policies, one module each; every module exposes ``POLICY``.

Policies import only ``harness.policy``: they are pure decisions over a ``Situation``.
"""
