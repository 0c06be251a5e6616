"""The `warpsplat` command-line tools (thin: parse, call the library, report)."""
