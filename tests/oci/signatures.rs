//! Cosign-compatible signatures: `host sign` makes them where cosign keeps them, OpenSSL
//! verifies what it signed (a second implementation), a manifest's `verify` key and
//! `require_signatures` refuse what is unsigned or signed by another key, nothing stored or
//! run; and a verified component keeps verifying from the cache with the registry stopped.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use toolhost_tests::components::CALCULATOR;

use crate::registry::{Registry, Workspace, assert_refused, http_get};

/// A P-256 key pair made by OpenSSL: (private, public), PEM.
fn key_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let private = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    let made = Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
        ])
        .arg(&private)
        .status()
        .expect("openssl runs");
    assert!(made.success());
    let made = Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&private)
        .arg("-out")
        .arg(&public)
        .status()
        .expect("openssl runs");
    assert!(made.success());
    (private, public)
}

fn sign(workspace: &Workspace, reference: &str, key: &Path) {
    workspace
        .host("sign")
        .arg(reference)
        .arg("--key")
        .arg(key)
        .run_blocking()
        .assert_success();
}

#[test]
fn a_signed_component_verifies_and_keeps_verifying_offline() {
    toolhost_tests::require_guests();
    let registry = Registry::start();
    let workspace = Workspace::new();
    let (private, public) = key_pair(workspace.path(), "acme");
    let reference = registry.reference("tools/calculator:1");
    workspace.push(CALCULATOR, &reference);
    sign(&workspace, &reference, &private);
    let manifest = workspace.manifest(&format!(
        "[oci]\nrequire_signatures = true\n\n[components.calc]\npath = \"{reference}\"\n\
         verify = {{ key = \"acme.pub\" }}\n"
    ));
    let call = || {
        workspace
            .host("call")
            .arg(&manifest)
            .args(["add", r#"{"a": 40, "b": 2}"#])
            .run_blocking()
    };
    let out = call();
    out.assert_success();
    assert_eq!(out.stdout.trim(), "42.0");
    let out = workspace.pull(&reference, &["--key", public.to_str().unwrap()]);
    out.assert_success();
    assert_eq!(out.json()["signature_verified"], true);

    registry.stop();
    let out = call();
    out.assert_success();
    assert_eq!(out.stdout.trim(), "42.0");
}

#[test]
fn the_signature_is_where_cosign_keeps_it_and_openssl_verifies_it() {
    toolhost_tests::require_guests();
    let registry = Registry::start();
    let workspace = Workspace::new();
    let (private, public) = key_pair(workspace.path(), "acme");
    let reference = registry.reference("tools/calculator:1");
    let digest = workspace.push(CALCULATOR, &reference)["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    sign(&workspace, &reference, &private);

    let base = "/v2/tools/calculator";
    let tag = format!("{}.sig", digest.replace(':', "-"));
    let address = registry.address();
    let manifest: serde_json::Value = serde_json::from_slice(&http_get(
        &address,
        &format!("{base}/manifests/{tag}"),
        "application/vnd.oci.image.manifest.v1+json",
    ))
    .unwrap();
    let layer = &manifest["layers"][0];
    assert_eq!(
        layer["mediaType"],
        "application/vnd.dev.cosign.simplesigning.v1+json"
    );
    let payload = http_get(
        &address,
        &format!("{base}/blobs/{}", layer["digest"].as_str().unwrap()),
        "*/*",
    );
    let claims: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        claims["critical"]["image"]["docker-manifest-digest"],
        digest
    );
    assert_eq!(
        claims["critical"]["type"],
        "cosign container image signature"
    );
    assert_eq!(
        claims["critical"]["identity"]["docker-reference"],
        format!("{}/tools/calculator", registry.address())
    );

    let signature = base64::engine::general_purpose::STANDARD
        .decode(
            layer["annotations"]["dev.cosignproject.cosign/signature"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
    let payload_file = workspace.path().join("payload.json");
    let signature_file = workspace.path().join("payload.sig");
    std::fs::write(&payload_file, &payload).unwrap();
    std::fs::write(&signature_file, &signature).unwrap();
    let verified = Command::new("openssl")
        .args(["dgst", "-sha256", "-verify"])
        .arg(&public)
        .arg("-signature")
        .arg(&signature_file)
        .arg(&payload_file)
        .output()
        .expect("openssl runs");
    assert!(
        verified.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&verified.stdout)
    );
}

#[test]
fn unsigned_or_signed_by_another_key_is_refused_when_required() {
    toolhost_tests::require_guests();
    let registry = Registry::start();
    let workspace = Workspace::new();
    let (_, public) = key_pair(workspace.path(), "acme");
    let (other, _) = key_pair(workspace.path(), "mallory");
    let reference = registry.reference("tools/calculator:1");
    // Pushed and signed from elsewhere: this workspace's cache holds only what it pulled.
    let publisher = Workspace::new();
    publisher.push(CALCULATOR, &reference);
    let manifest = workspace.manifest(&format!(
        "[oci]\nrequire_signatures = true\n\n[oci.registries.\"{}\"]\n\
         verify = {{ key = \"acme.pub\" }}\n\n[components.calc]\npath = \"{reference}\"\n",
        registry.address()
    ));
    let call = || {
        workspace
            .host("call")
            .arg(&manifest)
            .args(["add", r#"{"a": 1, "b": 2}"#])
            .run_blocking()
    };

    let out = call();
    assert_refused(&out, &[&reference, "it is not signed", ".sig tag"]);
    assert!(out.stdout.is_empty());
    assert!(workspace.stored_blobs().is_empty(), "nothing was stored");

    sign(&publisher, &reference, &other);
    let out = call();
    assert_refused(
        &out,
        &[
            &reference,
            "no signature verifies with",
            public.to_str().unwrap(),
        ],
    );
    assert!(out.stdout.is_empty());
    assert!(workspace.stored_blobs().is_empty(), "nothing was stored");

    // Required, and no key named for the registry: the error says where to name one.
    let manifest = workspace.manifest(&format!(
        "[oci]\nrequire_signatures = true\n\n[components.calc]\npath = \"{reference}\"\n"
    ));
    let out = workspace.call(&manifest, "add", r#"{"a": 1, "b": 2}"#);
    assert_refused(&out, &[&reference, "no key is named for it", "verify = "]);
}
