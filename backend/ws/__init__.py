"""Socket.IO: the `/chat` namespace and the sinks that emit to its rooms."""
