"""Frontend requests that wait for the browser (issue 6); import from `pending_requests`."""
