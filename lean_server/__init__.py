"""lean_server package (public API re-exported here by the integrator)."""
