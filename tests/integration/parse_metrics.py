"""Parses a Prometheus text exposition with the reference parser
(prometheus_client, Debian's python3-prometheus-client) and prints every
sample as JSON: [{"family", "type", "name", "labels", "value"}, ...].
A missing module or text the parser rejects exits non-zero."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
samples = []
for family in text_string_to_metric_families(text):
    for s in family.samples:
        samples.append({"family": family.name, "type": family.type, "name": s.name,
                        "labels": s.labels, "value": s.value})
print(json.dumps(samples))
