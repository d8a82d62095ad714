"""The file names of a point directory (``RESULTS/<run>/points/<point-id>/``), in one place: the load generator,
the agentic replay, the evals, the results layout, the store and the report all name these files through it."""

POINT_FILE = "point.json"  # the catalog row the point was measured for
STATUS_FILE = "status.json"  # done / failed / skipped, written after the result
RESULT_FILE = "result.json"  # the measured BenchResult
RECORDS_FILE = "records.jsonl.gz"  # one raw record per request
ENGINE_LOG = "engine.log"  # the engine's log lines of this point
EVAL_FILE = "eval.json"  # the graded accuracy eval
EVAL_SAMPLES_FILE = "eval-samples.jsonl"  # every graded question
EVAL_STATUS_FILE = "eval-status.json"  # pass / accuracy-fail / failed, with the reason
LMEVAL_LOG = "lm-eval.log"  # the harness' own output
LMEVAL_DIR = "lm-eval"  # lm-eval's results_*.json / samples_*.jsonl, flattened, + meta_env.json
