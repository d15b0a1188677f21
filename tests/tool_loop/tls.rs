//! A model server over TLS whose certificate a private CA signed (made by the test): `host
//! run` refuses it, naming the setting that trusts it, until the CA is named in
//! `TOOLHOST_CA_BUNDLE`; then the run goes through it.

use std::path::Path;

use toolhost_tests::cli::{HostCommand, HostOutput, ManifestFile};
use toolhost_tests::model::{Format, ScriptedModel, text};
use toolhost_tests::tls::{PrivateCa, TlsFront};

/// `host run "Hello?"` against `base_url`, with `TOOLHOST_CA_BUNDLE` naming `bundle` (unset
/// without one).
async fn run(base_url: &str, bundle: Option<&Path>) -> HostOutput {
    let manifest = ManifestFile::calculator("");
    HostCommand::new("run")
        .manifest(&manifest)
        .args([
            "--model",
            "openai:scripted",
            "--base-url",
            base_url,
            "Hello?",
        ])
        .ca_bundle(bundle)
        .run()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_server_behind_a_private_ca_is_used_once_its_ca_is_named() {
    let model = ScriptedModel::start(Format::OpenAi, vec![text("Hello over TLS.")]).await;
    let ca = PrivateCa::new();
    let front = TlsFront::start(&ca, &model.authority()).await;
    let base_url = format!("{}/v1", front.url());

    let refused = run(&base_url, None).await;
    assert!(!refused.success(), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains(&format!("the TLS certificate of {base_url} is not trusted")),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("TOOLHOST_CA_BUNDLE"),
        "the setting is named: {}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("UnknownIssuer"),
        "rustls's reason is kept: {}",
        refused.stderr
    );
    assert!(model.requests().is_empty(), "no request got through");

    let trusted = run(&base_url, Some(ca.pem_file())).await;
    trusted.assert_success();
    assert_eq!(trusted.stdout, "Hello over TLS.\n");
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_bundle_that_holds_no_certificate_is_refused_with_the_variable_named() {
    let model = ScriptedModel::start(Format::OpenAi, vec![text("unused")]).await;
    let not_pem = ManifestFile::calculator("");
    let out = run(&model.base_url(), Some(not_pem.path())).await;
    assert!(!out.success(), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "the environment variable TOOLHOST_CA_BUNDLE names {}, which holds no `BEGIN \
             CERTIFICATE` block",
            not_pem.path().display()
        )),
        "{}",
        out.stderr
    );
    assert!(model.requests().is_empty());
}
