"""HTTP API: FastAPI app factory, dependencies, error mapping, routes per resource."""
