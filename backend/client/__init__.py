"""The command line's API client: config file, HTTP calls with exit codes, output, apply, chat.

Imported only by the CLI (`backend.cli`); nothing on the server side imports it.
"""
