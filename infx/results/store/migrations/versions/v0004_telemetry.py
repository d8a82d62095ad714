"""schema 4: telemetry per point (power and energy in InferenceX's keys, engine state)."""

from __future__ import annotations

from alembic import op

from infx.results.store.migrations.columns import Int, T, key, reals

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("telemetry", *key(), T("gpu_tool"), Int("expected_gpu_count"), Int("power_metric_schema_version"),
                    Int("power_valid", null=False), T("power_reasons_json", null=False),
                    *reals("total_gpu_energy_j", "avg_total_gpu_power_w", "avg_power_w",
                           "joules_per_successful_query", "joules_per_input_token", "joules_per_output_token",
                           "joules_per_total_token"),
                    Int("cpu_energy_valid"),
                    *reals("cpu_energy_j", "cpu_avg_power_w", "cpu_joules_per_output_token", "running_mean",
                           "running_max", "waiting_mean", "waiting_max", "kv_usage_mean", "kv_usage_max",
                           "preemptions", "prefix_cache_hit_rate", "theoretical_prefix_hit_rate"),
                    T("summary_json", null=False))


def downgrade() -> None:
    op.drop_table("telemetry")
