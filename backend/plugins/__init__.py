"""Claude Code plugins: import (ZIP of a plugin or a marketplace), storage, slash commands."""
