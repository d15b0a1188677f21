"""An OTLP/HTTP receiver for the tests: decodes each POST to /v1/traces and /v1/metrics with
the OpenTelemetry project's own protobuf definitions (opentelemetry-proto) and prints one JSON
line per span (and one per metric, `{"service", "metric", "points"}`, the attributes of
each of its data points) on stdout; the first line is
`listening on PORT`. Only binary protobuf, as toolhost
sends it (http/protobuf)."""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def attributes(pairs):
    values = {}
    for pair in pairs:
        value = pair.value
        kind = value.WhichOneof("value")
        values[pair.key] = getattr(value, kind) if kind else None
    return values


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/v1/metrics":
            self.metrics(body)
            return
        if self.path != "/v1/traces":
            self.send_error(404, "only /v1/traces and /v1/metrics")
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            service = attributes(resource_spans.resource.attributes).get("service.name")
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    line = {
                        "service": service,
                        "name": span.name,
                        "kind": span.kind,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "attributes": attributes(span.attributes),
                        "events": [event.name for event in span.events],
                        "status": span.status.code,
                    }
                    print(json.dumps(line), flush=True)
        self.answer(ExportTraceServiceResponse().SerializeToString())

    def metrics(self, body):
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        for resource_metrics in request.resource_metrics:
            service = attributes(resource_metrics.resource.attributes).get("service.name")
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    kind = metric.WhichOneof("data")
                    points = getattr(metric, kind).data_points if kind else []
                    line = {
                        "service": service,
                        "metric": metric.name,
                        "points": [attributes(point.attributes) for point in points],
                    }
                    print(json.dumps(line), flush=True)
        self.answer(ExportMetricsServiceResponse().SerializeToString())

    def answer(self, answer):
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format, *args):
        sys.stderr.write(format % args + "\n")


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
print(f"listening on {server.server_address[1]}", flush=True)
server.serve_forever()
