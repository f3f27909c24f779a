"""Values the executor, the templates and the collector must agree on.

They are fixed by the job layout on Slurm and by the dashboards that read the exported data, so
they are constants rather than settings.
"""

from __future__ import annotations

COLLECTOR_SERVICE_NAME = "otel_collector"
COLLECTOR_DIR = "otel"
COLLECTOR_CONFIG_NAME = "collector.yaml"
# Beside it when the backend's queue is on disk: the config that sends what the queue still
# holds (the stop runs it after the collector; `nemo-gym-otel drain` later).
DRAIN_CONFIG_NAME = "drain.yaml"
# Beside them too: what the job step runs instead of collector.yaml when the backend's queue is on
# disk, the job's collector without the backend path, and that path in a process of its own (the
# sender, which honours the backend's Retry-After; see _render/sender_config.py).
INGEST_CONFIG_NAME = "ingest.yaml"
SENDER_CONFIG_NAME = "sender.yaml"
# How long the stop waits for the sender to exit on TERM before it kills it: a sender waiting out
# a backend's Retry-After holds its TERM that long; what it had not delivered is still queued.
SENDER_STOP_SECONDS = 5
# The stop's drain is one process (queue, hop and backend path): its TERM waits for the hop's
# requests, which wait out the backend's Retry-After. Its hop's timeout bounds that, inside
# SHUTDOWN_WAIT_SECONDS and past DRAIN_SECONDS (see _render/drain_config.py); the job's hop waits
# 120s (the sender holds the wait there), `nemo-gym-otel drain`'s without a limit (two
# processes too, see _step/drain.py).
DRAIN_HOP_TIMEOUT_SECONDS = 15
# How long at most the stop runs the drain config once it is healthy: a stop's remainder (the
# last second's batch) takes a healthy backend a second or two. The stop ends the drain sooner,
# once two readings in a row of its queues (DRAIN_METRICS_PORT) find them empty, unless the
# delivery report is on: then it runs the whole time, so that one reading (5s) after the
# queue emptied reaches the files and records it empty.
DRAIN_SECONDS = 8
# Beside them, one JSON line per run of `nemo-gym-otel drain` (the report reads it).
DRAIN_RECORD_NAME = "drain.jsonl"
COLLECTOR_HEALTH_PORT = 13133
OTLP_GRPC_PORT = 4317
OTLP_HTTP_PORT = 4318
# The loopback port of the hop from the backend's disk queue to the tenant stamp (see the
# template's data flow), and the queue's folder in <job dir>/otel/.
QUEUE_HOP_PORT = 4319
# The stop's drain's own receiver, on the hop's loopback host: its queue pipelines' receiver and
# where its delivery report is pushed. The drain binds neither of the job's OTLP ports, which
# the job's processes may still push to while it runs.
DRAIN_RECEIVER_PORT = 4320
# Where the stop's drain serves its own metrics (Prometheus, on the hop's loopback host): the
# stop reads its queues' sizes there to end it once they are empty.
DRAIN_METRICS_PORT = 4321
QUEUE_DIR_NAME = "queue"
# Beside it, when the job directory's file system does not lock files and the step's start put
# the queue in a node-local folder (otel/queue then links there): one "<node> <folder>" line per
# place an attempt of the job used (see _step/queue_place.py).
QUEUE_PLACES_NAME = "queue-node-local"
# The step's start writes both (see _step/disk_budget.py): the budget's figures, and the queue's
# size within it as a config merged over collector.yaml.
DISK_BUDGET_NAME = "disk-budget"
QUEUE_BUDGET_CONFIG_NAME = "queue-budget.yaml"
GYM_TELEMETRY_EXTRA = "telemetry"
FINAL_SCRAPE_GRACE_SECONDS = 20
SHUTDOWN_WAIT_SECONDS = 30

# Service types whose serving port exposes Prometheus /metrics (vLLM serves it on that port).
MODEL_SERVICE_TYPES = ("vllm", "vllm_pd")
EXPORTER_KINDS = ("otlp_http", "file")
SIGNALS = ("traces", "metrics", "logs")
TEMPLATE_PATH_ENV = "NEMO_GYM_OTEL_TEMPLATE_PATH"
# The variable holding the ingest token when otel.token_env does not name another (the submit
# config's schema states the same default; tests/test_one_home.py holds them equal).
DEFAULT_TOKEN_ENV = "OTEL_TOKEN"
# The delivery report (otel.delivery_report): the resource attribute that marks the collector's
# own counters among the job's metrics, and how often the collector pushes them to itself.
DELIVERY_REPORT_MARKER = "nemo_gym.otel.delivery_report"
DELIVERY_REPORT_INTERVAL_SECONDS = 5
# Each signal's file in <job dir>/otel/: <signal>.jsonl, with ZSTD_SUFFIX after it where the
# collector compresses (see _templating/file_compression.py).
SIGNAL_FILE_SUFFIX = ".jsonl"
ZSTD_SUFFIX = ".zst"
# The collector step appends the collector's output here, in <job dir>/otel/; report reads it.
COLLECTOR_LOG_NAME = "collector.log"
# Past its first part, collector.log goes on in these two files beside it (the newest last); what
# lay between was dropped (see _step/bounded_log.py).
COLLECTOR_LOG_OLDER_SUFFIX = ".tail.old"
COLLECTOR_LOG_TAIL_SUFFIX = ".tail"
