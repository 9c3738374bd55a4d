"""Targets: how a backend makes a volume reachable to a consumer.

A target is chosen per backend section with ``target_protocol``.  Each has
``create_export``, ``remove_export`` and ``connection_data``; exports are
per attachment, so ``attachment_id`` names them.
"""
