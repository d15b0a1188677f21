//! Bad input, each a clear error naming the reference, nothing stored, nothing run: a blob
//! altered in the registry, a manifest that does not hash to its digest, a digest the registry
//! does not have, an artifact of the wrong media type, and a misbehaving registry (a raw HTTP
//! server on 127.0.0.1) that answers 10 GB or never answers.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use toolhost_tests::components::CALCULATOR;

use crate::registry::{Registry, Workspace, assert_refused, oras};

const TEN_GB: u64 = 10 * 1024 * 1024 * 1024;

/// Pushes the calculator and returns (manifest digest, component digest).
fn pushed(workspace: &Workspace, reference: &str) -> (String, String) {
    let pushed = workspace.push(CALCULATOR, reference);
    (
        pushed["digest"].as_str().unwrap().to_owned(),
        pushed["component_digest"].as_str().unwrap().to_owned(),
    )
}

/// Flips bytes in the middle of `file`, keeping its size.
fn tamper(file: &std::path::Path) {
    let mut bytes = std::fs::read(file).unwrap();
    let middle = bytes.len() / 2;
    for byte in &mut bytes[middle..middle + 4] {
        *byte ^= 0xff;
    }
    std::fs::write(file, bytes).unwrap();
}

#[test]
fn a_blob_altered_in_the_registry_is_refused_and_not_stored_or_run() {
    toolhost_tests::require_guests();
    let registry = Registry::start();
    let publisher = Workspace::new();
    let reference = registry.reference("tools/calculator:1");
    let (_, layer) = pushed(&publisher, &reference);
    tamper(&registry.blob_file(&layer));

    let user = Workspace::new();
    let out = user.call(&reference, "add", r#"{"a": 1, "b": 2}"#);
    assert_refused(&out, &[&reference, "does not match its digest", &layer]);
    assert!(out.stdout.is_empty(), "nothing ran: {}", out.stdout);
    assert!(user.stored_blobs().is_empty(), "{:?}", user.stored_blobs());
}

#[test]
fn a_manifest_that_is_not_its_digest_or_a_digest_not_there_is_refused() {
    toolhost_tests::require_guests();
    let registry = Registry::start();
    let workspace = Workspace::new();
    let reference = registry.reference("tools/calculator:1");
    let (digest, _) = pushed(&workspace, &reference);
    let by_digest = format!("{}@{digest}", registry.reference("tools/calculator"));

    let absent = format!(
        "{}@sha256:{}",
        registry.reference("tools/calculator"),
        "0".repeat(64)
    );
    let out = workspace.pull(&absent, &[]);
    assert_refused(&out, &[&absent, "404", "no such tag or digest"]);

    tamper(&registry.blob_file(&digest));
    let user = Workspace::new();
    let out = user.pull(&by_digest, &[]);
    assert_refused(
        &out,
        &[&by_digest, "manifest does not match its digest", &digest],
    );
    assert!(user.stored_blobs().is_empty(), "{:?}", user.stored_blobs());
}

#[test]
fn an_artifact_of_another_media_type_is_refused_with_what_it_is() {
    toolhost_tests::require_guests();
    let registry = Registry::start();
    let workspace = Workspace::new();
    oras(&[
        "push",
        &registry.address(),
        &format!("{}/images/not-wasm:1", registry.address()),
        CALCULATOR,
        "application/vnd.oci.image.config.v1+json",
        "application/vnd.oci.image.layer.v1.tar",
    ]);
    let reference = registry.reference("images/not-wasm:1");
    let out = workspace.call(&reference, "add", r#"{"a": 1, "b": 2}"#);
    assert_refused(
        &out,
        &[
            &reference,
            "is not a WebAssembly component artifact",
            "application/vnd.oci.image.config.v1+json",
        ],
    );
    assert!(out.stdout.is_empty());
    assert!(workspace.stored_blobs().is_empty());
}

/// How the raw registry misbehaves.
#[derive(Clone, Copy)]
enum Misbehaviour {
    /// A manifest announced as 10 GB, then zeros.
    ManifestOf10Gb,
    /// A manifest in chunks that never end.
    EndlessManifest,
    /// A valid manifest whose layer is declared 10 GB.
    LayerOf10Gb,
    /// A valid manifest of a 1 KiB layer, whose blob is sent as 10 GB.
    BlobLongerThanDeclared,
    /// Reads the request, never answers.
    Silent,
}

/// A raw HTTP server on 127.0.0.1 that misbehaves as told; returns its address.
fn misbehaving_registry(how: Misbehaviour) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream, how));
        }
    });
    address
}

/// Answers one request on `stream`, as `how` says, then closes it: every answer says
/// `Connection: close`, so that the client never sends its next request on a connection this
/// server has already closed (it was reset, and the client saw that instead of the refusal).
fn serve(mut stream: TcpStream, how: Misbehaviour) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    if matches!(how, Misbehaviour::Silent) {
        // Hold the connection open, answering nothing, until the client gives up.
        let _ = stream.read(&mut [0u8; 1]);
        return;
    }
    let zeros = vec![0u8; 64 * 1024];
    let manifest = |size: u64| {
        format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.wasm.config.v0+json","digest":"sha256:{z}","size":2}},"layers":[{{"mediaType":"application/wasm","digest":"sha256:{z}","size":{size}}}]}}"#,
            z = "1".repeat(64)
        )
    };
    let _ = if path == "/v2/" {
        stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}")
    } else if path.contains("/manifests/") {
        match how {
            Misbehaviour::ManifestOf10Gb => {
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: {TEN_GB}\r\n\r\n"
                );
                loop {
                    if stream.write_all(&zeros).is_err() {
                        break Ok(());
                    }
                }
            }
            Misbehaviour::EndlessManifest => {
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nTransfer-Encoding: chunked\r\n\r\n");
                loop {
                    let chunk = format!("{:x}\r\n", zeros.len());
                    if stream.write_all(chunk.as_bytes()).is_err()
                        || stream.write_all(&zeros).is_err()
                        || stream.write_all(b"\r\n").is_err()
                    {
                        break Ok(());
                    }
                }
            }
            Misbehaviour::LayerOf10Gb | Misbehaviour::BlobLongerThanDeclared => {
                let size = if matches!(how, Misbehaviour::LayerOf10Gb) {
                    TEN_GB
                } else {
                    1024
                };
                let body = manifest(size);
                write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
            }
            Misbehaviour::Silent => Ok(()),
        }
    } else if path.contains("/blobs/") {
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/octet-stream\r\nContent-Length: {TEN_GB}\r\n\r\n"
        );
        loop {
            if stream.write_all(&zeros).is_err() {
                break Ok(());
            }
        }
    } else {
        stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
    };
}

#[test]
fn a_registry_that_answers_10_gb_is_cut_off_at_the_limit() {
    toolhost_tests::require_guests();
    for (how, expect) in [
        (
            Misbehaviour::ManifestOf10Gb,
            "the manifest is larger than 4 MiB",
        ),
        (
            Misbehaviour::EndlessManifest,
            "the manifest is larger than 4 MiB",
        ),
        (
            Misbehaviour::LayerOf10Gb,
            "the component layer is larger than 512 MiB",
        ),
        (
            Misbehaviour::BlobLongerThanDeclared,
            "the component layer is larger than 1 KiB",
        ),
    ] {
        let address = misbehaving_registry(how);
        let reference = format!("oci://{address}/tools/huge:1");
        let workspace = Workspace::new();
        let started = Instant::now();
        let out = workspace.call(&reference, "add", "{}");
        assert_refused(&out, &[&reference, expect]);
        assert!(out.stdout.is_empty());
        assert!(
            workspace.stored_blobs().is_empty(),
            "{:?}",
            workspace.stored_blobs()
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{expect}: refused after {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn a_registry_that_never_answers_times_out_naming_the_reference() {
    toolhost_tests::require_guests();
    let address = misbehaving_registry(Misbehaviour::Silent);
    let reference = format!("oci://{address}/tools/silent:1");
    let workspace = Workspace::new();
    let started = Instant::now();
    let out = workspace.pull(&reference, &["--timeout", "2s"]);
    assert_refused(&out, &[&reference, "did not finish within 2s"]);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(15), "gave up after {took:?}");

    // The manifest's [oci] timeout, for a component it names.
    let manifest = workspace.manifest(&format!(
        "[oci]\ntimeout = \"1s\"\n\n[components.silent]\npath = \"{reference}\"\n"
    ));
    let out = workspace.call(&manifest, "add", "{}");
    assert_refused(&out, &[&reference, "did not finish within 1s"]);
    assert!(workspace.stored_blobs().is_empty());
}
