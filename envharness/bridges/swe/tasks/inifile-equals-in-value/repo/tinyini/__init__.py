"""A small parser for INI configuration files."""

from tinyini.parser import ParseError, get, parse

__all__ = ["ParseError", "get", "parse"]
