"""Pure text parsers: raw command output or file text in, frozen typed records out (no I/O)."""
