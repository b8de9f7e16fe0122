"""The main job's source system: a SQLite shop whose `orders` table keeps changing.

`ShopDatabase.create` makes the table and its first rows; `change` inserts new orders
and moves some existing ones on (status, amount), each touching `updated_at`, which is
what a timestamp+incrementing JdbcSource sees. WAL journaling lets the source read
while the changer writes.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

__all__ = ["REGIONS", "ShopDatabase"]

REGIONS = ("apac", "eu", "latam", "us")
PRODUCTS = ("kayak", "paddle", "tent", "lamp", "stove", "boots", "map", "rope")
STATUSES = ("new", "paid", "shipped", "delivered")
_NOW = "strftime('%Y-%m-%d %H:%M:%f', 'now')"
SCHEMA = f"""
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer TEXT NOT NULL,
    product TEXT NOT NULL,
    quantity INTEGER NOT NULL,
    amount DECIMAL(10, 2) NOT NULL,
    status TEXT NOT NULL,
    region TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL DEFAULT ({_NOW}),
    updated_at TIMESTAMP NOT NULL DEFAULT ({_NOW})
)
"""


class ShopDatabase:
    """The orders database (see the module docstring)."""

    def __init__(self, path: Path, *, seed: int = 7) -> None:
        self.path = path
        self._rng = random.Random(seed)
        self._conn: sqlite3.Connection | None = None
        self.changes = 0

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        return self._conn

    def create(self, rows: int) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        conn = self._connection()
        conn.execute("PRAGMA journal_mode=WAL")
        with conn:
            conn.execute(SCHEMA)
            # What the source's timestamp+incrementing query filters and sorts on.
            conn.execute("CREATE INDEX orders_changes ON orders (updated_at, id)")
        self.insert(rows)

    def _orders(self, first_id: int, n: int) -> list[tuple[object, ...]]:
        rng = self._rng
        out = []
        for i in range(first_id, first_id + n):
            quantity = rng.randint(1, 5)
            price = rng.choice((19.5, 42.0, 89.99, 120.0, 349.0))
            out.append(
                (
                    i,
                    f"customer-{rng.randint(1, 5000):04d}",
                    rng.choice(PRODUCTS),
                    quantity,
                    f"{quantity * price:.2f}",
                    "new",
                    rng.choice(REGIONS),
                )
            )
        return out

    def insert(self, n: int) -> None:
        conn = self._connection()
        with conn:
            first = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM orders").fetchone()[0]
            conn.executemany(
                "INSERT INTO orders (id, customer, product, quantity, amount, status, region) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                self._orders(first, n),
            )
        self.changes += n

    def update(self, n: int) -> None:
        """Move `n` random orders one status on (delivered ones stay), as a shop does."""
        conn = self._connection()
        with conn:
            top = conn.execute("SELECT max(id) FROM orders").fetchone()[0] or 0
            ids = [(self._rng.randint(1, top),) for _ in range(n)] if top else []
            conn.executemany(
                "UPDATE orders SET status = CASE status WHEN 'new' THEN 'paid' "
                "WHEN 'paid' THEN 'shipped' ELSE 'delivered' END, "
                f"updated_at = {_NOW} WHERE id = ?",
                ids,
            )
        self.changes += len(ids)

    def change(self, inserts: int, updates: int) -> None:
        self.insert(inserts)
        self.update(updates)

    def last_change(self) -> tuple[int, int]:
        """(id, updated_at in ms since the epoch, UTC) of the newest change: where a
        timestamp+incrementing source's offset ends up once it has read everything."""
        row = (
            self._connection()
            .execute(
                "SELECT id, CAST(round((julianday(updated_at) - 2440587.5) * 86400000) AS INTEGER)"
                " FROM orders ORDER BY updated_at DESC, id DESC LIMIT 1"
            )
            .fetchone()
        )
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def count(self) -> int:
        return int(self._connection().execute("SELECT count(*) FROM orders").fetchone()[0])

    def totals(self) -> dict[str, tuple[int, str]]:
        """Orders and revenue per region, as the lake's summary query computes them."""
        rows = self._connection().execute(
            "SELECT region, count(*), printf('%.2f', sum(amount)) FROM orders GROUP BY region"
        )
        return {region: (n, total) for region, n, total in rows}

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
