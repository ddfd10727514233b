"""Holds SQLite's write lock on the database `argv[1]` until a line arrives on stdin; says
`locked` once it holds it. A process of its own, because POSIX file locks do not conflict
within one process: the tests start it to make a store's write wait."""

import sqlite3
import sys

connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
connection.execute("ROLLBACK")
