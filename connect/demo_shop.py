"""The main job's source systems: a shop whose `orders` table keeps changing.

`ShopDatabase` is the SQLite shop: `create` makes the table and its first rows;
`change` inserts new orders and moves some existing ones on (status), each touching
`updated_at`, which is what a timestamp+incrementing JdbcSource sees. WAL journaling
lets the source read while the changer writes.

`PostgresShop` is the same shop in a PostgreSQL database, for the CDC run: it makes
`public.orders` only where there is none (or where the one there is its own, from an
earlier run — marked by the table's comment), and otherwise leaves the user's table
alone and generates nothing. Every insert and update is one change event of a
logical-decoding source, so once the source's replication slot exists the log must
hold exactly `rows + changes` rows (`changes` counts them).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["REGIONS", "SUMMARY_COLUMNS", "PostgresShop", "ShopDatabase", "ShopError"]

REGIONS = ("apac", "eu", "latam", "us")
PRODUCTS = ("kayak", "paddle", "tent", "lamp", "stove", "boots", "map", "rope")
STATUSES = ("new", "paid", "shipped", "delivered")
#: The columns the main job's Spark SQL summary reads.
SUMMARY_COLUMNS = ("id", "customer", "product", "amount", "status", "region", "updated_at")
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
_INSERT = "INSERT INTO orders (id, customer, product, quantity, amount, status, region) VALUES "
_NEXT_STATUS = (
    "status = CASE status WHEN 'new' THEN 'paid' WHEN 'paid' THEN 'shipped' ELSE 'delivered' END"
)


class ShopError(Exception):
    """A database the shop cannot use, said in one line (what is wrong and where)."""


class _Orders:
    """What both shops share: the random orders and the count of changes made."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self.changes = 0

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

    def _picks(self, top: int, n: int) -> list[tuple[int]]:
        """`n` random ids of orders 1 to `top`, for updates."""
        return [(self._rng.randint(1, top),) for _ in range(n)] if top else []

    def insert(self, n: int) -> None:
        raise NotImplementedError

    def update(self, n: int) -> None:
        raise NotImplementedError

    def change(self, inserts: int, updates: int) -> None:
        self.insert(inserts)
        self.update(updates)


class ShopDatabase(_Orders):
    """The SQLite orders database (see the module docstring)."""

    def __init__(self, path: Path, *, seed: int = 7) -> None:
        super().__init__(seed)
        self.path = path
        self._conn: sqlite3.Connection | None = None

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

    def insert(self, n: int) -> None:
        conn = self._connection()
        with conn:
            first = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM orders").fetchone()[0]
            conn.executemany(_INSERT + "(?, ?, ?, ?, ?, ?, ?)", self._orders(first, n))
        self.changes += n

    def update(self, n: int) -> None:
        """Move `n` random orders one status on (delivered ones stay), as a shop does."""
        conn = self._connection()
        with conn:
            top = conn.execute("SELECT max(id) FROM orders").fetchone()[0] or 0
            ids = self._picks(top, n)
            conn.executemany(
                f"UPDATE orders SET {_NEXT_STATUS}, updated_at = {_NOW} WHERE id = ?", ids
            )
        self.changes += len(ids)

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


_MARK = "tributary main job shop"
_PG_NOW = "(clock_timestamp() AT TIME ZONE 'UTC')"
PG_SCHEMA = f"""
CREATE TABLE public.orders (
    id bigint PRIMARY KEY,
    customer text NOT NULL,
    product text NOT NULL,
    quantity int NOT NULL,
    amount numeric(10, 2) NOT NULL,
    status text NOT NULL,
    region text NOT NULL,
    created_at timestamp NOT NULL DEFAULT {_PG_NOW},
    updated_at timestamp NOT NULL DEFAULT {_PG_NOW}
)
"""


class PostgresShop(_Orders):
    """The shop in a PostgreSQL database (see the module docstring). `params` are
    psycopg2's connection keywords (`connectors.postgres.config.connection_params`),
    `where` how messages name the database (never with its password)."""

    def __init__(self, params: Mapping[str, Any], where: str, *, seed: int = 7) -> None:
        super().__init__(seed)
        self.where = where
        import psycopg2

        try:
            self._conn = psycopg2.connect(**params)
        except psycopg2.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ShopError(f"cannot connect to PostgreSQL at {where}: {reason}") from None
        self._conn.autocommit = True

    def owns_orders(self) -> bool:
        """Whether the job may (re)make `public.orders`: there is none, or the one there
        is the shop's own. A table of the user's must have the summary's columns."""
        with self._conn.cursor() as cur:
            cur.execute(
                "SELECT obj_description(c, 'pg_class') FROM to_regclass('public.orders') c "
                "WHERE c IS NOT NULL"
            )
            row = cur.fetchone()
            if row is None or row[0] == _MARK:
                return True
            cur.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = 'public' AND table_name = 'orders'"
            )
            present = {r[0] for r in cur.fetchall()}
        missing = [c for c in SUMMARY_COLUMNS if c not in present]
        if missing:
            raise ShopError(
                f"public.orders at {self.where} has no column {', '.join(missing)}: the "
                f"summary reads {', '.join(SUMMARY_COLUMNS)} (a database without an orders "
                "table gets the job's own shop)"
            )
        return False

    def create(self, rows: int, *, slot: str) -> None:
        """(Re)make the shop's `public.orders` with `rows` orders, and drop the
        replication slot `slot` an earlier run left: its position belongs to the old
        table, and the source must make its own before changes start counting."""
        import psycopg2

        try:
            with self._conn.cursor() as cur:
                cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
                held = cur.fetchone()
                if held is not None and held[0]:
                    raise ShopError(
                        f"replication slot {slot} at {self.where} is in use by another "
                        "connection (another main job?)"
                    )
                if held is not None:
                    cur.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                cur.execute("DROP TABLE IF EXISTS public.orders")
                cur.execute(PG_SCHEMA)
                cur.execute(f"COMMENT ON TABLE public.orders IS '{_MARK}'")
        except psycopg2.Error as exc:
            raise ShopError(f"cannot make public.orders at {self.where}: {exc}".strip()) from None
        self.insert(rows)

    def slot_exists(self, slot: str) -> bool:
        with self._conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,))
            return cur.fetchone() is not None

    def insert(self, n: int) -> None:
        from psycopg2.extras import execute_values

        with self._conn, self._conn.cursor() as cur:  # one transaction
            cur.execute("SELECT coalesce(max(id), 0) + 1 FROM public.orders")
            first = cur.fetchone()[0]
            execute_values(cur, _INSERT + "%s", self._orders(first, n), page_size=5000)
        self.changes += n

    def update(self, n: int) -> None:
        """Move `n` random orders one status on: one UPDATE, so one event, each."""
        from psycopg2.extras import execute_batch

        with self._conn, self._conn.cursor() as cur:
            cur.execute("SELECT max(id) FROM public.orders")
            ids = self._picks(cur.fetchone()[0] or 0, n)
            execute_batch(
                cur,
                f"UPDATE public.orders SET {_NEXT_STATUS}, updated_at = {_PG_NOW} WHERE id = %s",
                ids,
                page_size=500,
            )
        self.changes += len(ids)

    def count(self) -> int:
        with self._conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM public.orders")
            return int(cur.fetchone()[0])

    def totals(self) -> dict[str, tuple[int, str]]:
        """Orders and revenue per region, as the lake's summary query computes them."""
        with self._conn.cursor() as cur:
            cur.execute(
                "SELECT region, count(*), sum(amount)::text FROM public.orders GROUP BY region"
            )
            return {region: (n, total) for region, n, total in cur.fetchall()}

    def close(self) -> None:
        self._conn.close()
