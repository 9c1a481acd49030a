"""What agents touch: hook entry points, the warm recall process, installers, the MCP server."""
