//! A pull's requests to the registry as spans, exported over OTLP/HTTP to the Python receiver
//! that decodes them with the OpenTelemetry project's own protobuf definitions
//! (`toolhost_tests::otlp`): `host pull` from the real registry is one `oci pull` span, each
//! request of it a client span of OpenTelemetry's HTTP conventions under it; and each request
//! sends its span's trace context on (`traceparent`), seen by a registry that replays what the
//! real one served and records what it is sent.

use serde_json::Value;
use toolhost_tests::components::CALCULATOR;
use toolhost_tests::otlp::Receiver;
use toolhost_tests::server::{Reply, ReplyBody, TestServer};

use crate::registry::{Registry, Workspace, http_get};

const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// `host pull REFERENCE --json` in `workspace`, its spans exported to `receiver`.
async fn traced_pull(workspace: &Workspace, reference: &str, receiver: &Receiver) {
    workspace
        .host("pull")
        .args([reference, "--json"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .env("OTEL_SERVICE_NAME", "puller")
        .run()
        .await
        .assert_success();
}

/// The span of a request to `port` whose URL ends with `path`.
async fn request_span(receiver: &Receiver, port: u16, path: &str) -> Value {
    receiver
        .span(|s| {
            s["attributes"]["server.port"] == port
                && (s["attributes"]["url.full"].as_str()).is_some_and(|url| url.ends_with(path))
        })
        .await
}

#[tokio::test]
async fn each_request_of_a_pull_is_a_span_under_the_pull() {
    toolhost_tests::require_guests();
    let receiver = Receiver::start().await;
    let registry = Registry::start();
    let reference = registry.reference("tools/calculator:1");
    let pushed = Workspace::new().push(CALCULATOR, &reference);
    let layer = pushed["component_digest"].as_str().unwrap().to_owned();
    let port: u16 = registry
        .address()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();

    traced_pull(&Workspace::new(), &reference, &receiver).await;
    let pull = receiver.span(|s| s["name"] == "oci pull").await;
    assert_eq!(pull["service"], "puller");
    assert_eq!(pull["parent_span_id"], "", "the command's root: {pull}");
    assert_eq!(pull["attributes"]["oci.reference"], reference);
    let manifest = request_span(&receiver, port, "/manifests/1").await;
    let blob = request_span(&receiver, port, &format!("/blobs/{layer}")).await;
    for (request, path) in [
        (&manifest, "manifests/1".to_owned()),
        (&blob, format!("blobs/{layer}")),
    ] {
        assert_eq!(request["name"], "GET", "{request}");
        assert_eq!(request["kind"], 3, "a client span: {request}");
        assert_eq!(request["trace_id"], pull["trace_id"], "{request}");
        assert_eq!(request["parent_span_id"], pull["span_id"], "{request}");
        let attributes = &request["attributes"];
        assert_eq!(attributes["http.request.method"], "GET", "{request}");
        assert_eq!(attributes["http.response.status_code"], 200, "{request}");
        assert_eq!(attributes["server.address"], "127.0.0.1", "{request}");
        let url = format!("http://{}/v2/tools/calculator/{path}", registry.address());
        assert_eq!(attributes["url.full"], url, "{request}");
        assert!(attributes.get("error.type").is_none(), "{request}");
    }
    // oci-client's authentication (its own requests, no hook for a span of each) is one span
    // under the pull.
    let authorize = receiver.span(|s| s["name"] == "oci authorize").await;
    assert_eq!(authorize["parent_span_id"], pull["span_id"], "{authorize}");

    // The same artifact from a registry that records what it is sent: each request carries
    // its own span's trace context.
    let manifest_bytes = http_get(
        &registry.address(),
        "/v2/tools/calculator/manifests/1",
        MANIFEST_TYPE,
    );
    let layer_bytes = std::fs::read(registry.blob_file(&layer)).unwrap();
    let layer_path = format!("/v2/tools/calculator/blobs/{layer}");
    let replay = TestServer::start(move |request| {
        let (content_type, body) = match request.path.as_str() {
            "/v2/tools/calculator/manifests/1" => (MANIFEST_TYPE, manifest_bytes.clone()),
            path if path == layer_path => ("application/octet-stream", layer_bytes.clone()),
            "/v2/" => ("application/json", b"{}".to_vec()),
            _ => return Reply::text(404, "not here"),
        };
        Reply {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body: ReplyBody::Full(body),
        }
    })
    .await;
    let replayed = format!("oci://{}/tools/calculator:1", replay.authority());
    traced_pull(&Workspace::new(), &replayed, &receiver).await;
    let replay_port: u16 = replay
        .authority()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let requests = replay.requests();
    for path in ["/manifests/1".to_owned(), format!("/blobs/{layer}")] {
        let span = request_span(&receiver, replay_port, &path).await;
        let sent = requests
            .iter()
            .find(|request| request.path.ends_with(&path))
            .unwrap_or_else(|| panic!("no request for {path}: {requests:?}"));
        let expected = format!(
            "00-{}-{}-01",
            span["trace_id"].as_str().unwrap(),
            span["span_id"].as_str().unwrap()
        );
        assert_eq!(
            sent.header("traceparent"),
            Some(expected.as_str()),
            "{path}"
        );
    }
}
