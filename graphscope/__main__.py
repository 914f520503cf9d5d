from graphscope.cli import entry

raise SystemExit(entry())
