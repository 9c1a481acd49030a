"""The secret guard: what no byte hafiza writes or injects may hold, and the token formats it knows."""
