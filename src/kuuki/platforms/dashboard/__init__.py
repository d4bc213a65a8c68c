"""The operator dashboard: how a running bot behaves over days, read from its
store. Read-only. `dashboard_routes` is mounted by the operator server next to
``/metrics``."""

from kuuki.platforms.dashboard.app import Overview, dashboard_routes

__all__ = ["Overview", "dashboard_routes"]
