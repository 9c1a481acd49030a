"""The command line: the composition root, thin over the packages below."""
