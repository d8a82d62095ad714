"""The results store: one schema (SQLAlchemy Core, Alembic migrations), two backends (SQLite at
``RESULTS/infx.db``, the embedded default; PostgreSQL, the team store), and the only code in infx that speaks SQL.

Modules: ``schema`` (every table), ``migrations/`` + ``migrate`` (Alembic, run from code), ``url`` (which store:
``--store`` > ``INFX_STORE_URL`` > ``infx.toml`` ``[store] url`` > ``RESULTS/infx.db``; passwords masked),
``backend`` (connections, transactions, one-line errors), ``bundles`` (a point read and validated), ``writes``
(bundles -> rows, batched idempotent upserts), ``reads`` (typed reads), ``snapshots`` (curve scopes, latest,
as-of, append-only chains), ``quarantine`` (refused rows), ``api`` (:class:`Store`), ``ingest`` (one point, as
``infx run`` goes), ``copy`` (``infx store copy``).

The database is an index of the results directory: the files (``result.json``, ``records.jsonl.gz``) stay the
source of truth and ``infx ingest`` rebuilds it from them.
"""

from infx.results.store.api import Store
from infx.results.store.backend import LOCK_WAIT_S, StoreUnreachable, store_error
from infx.results.store.bundles import (
    IngestReport,
    PointBundle,
    bundle_digest,
    hardware_of,
    make_bundle,
    pack_ci,
    point_conc,
    read_bundle,
    role_gpus_of,
    topology_label,
    unpack_ci,
)
from infx.results.store.ingest import ingest_point, locate_results, require_results
from infx.results.store.schema import SCHEMA_VERSION
from infx.results.store.url import StoreUrl

__all__ = [
    "LOCK_WAIT_S", "SCHEMA_VERSION", "IngestReport", "PointBundle", "Store", "StoreUrl", "bundle_digest",
    "hardware_of", "ingest_point", "locate_results", "make_bundle", "pack_ci", "point_conc", "read_bundle",
    "require_results", "role_gpus_of", "store_error", "topology_label", "unpack_ci",
    "StoreUnreachable",
]
