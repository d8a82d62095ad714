"""What a sweep did: the points measured, failed, skipped, reused, and the launches it took."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SweepSummary:
    done: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # gate rejects (preflight): never launched
    reused: list[str] = field(default_factory=list)  # already measured before this invocation
    previously_failed: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)  # fail-fast or interruption
    eval_failed: list[str] = field(default_factory=list)  # evals that produced no complete score
    accuracy_failed: list[str] = field(default_factory=list)  # graded below the threshold
    launches: int = 0
    startup_seconds: float = 0.0
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return (not self.failed and not self.not_run and not self.interrupted and not self.previously_failed
                and not self.eval_failed and not self.accuracy_failed)

    def merge(self, other: SweepSummary) -> None:
        self.done += other.done
        self.failed += other.failed
        self.skipped += other.skipped
        self.reused += other.reused
        self.previously_failed += other.previously_failed
        self.not_run += other.not_run
        self.eval_failed += other.eval_failed
        self.accuracy_failed += other.accuracy_failed
        self.launches += other.launches
        self.startup_seconds += other.startup_seconds
        self.interrupted = self.interrupted or other.interrupted
