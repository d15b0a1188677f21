//! `toolhost::Host`: a manifest in, tools and loop settings out; per-source tool selection,
//! prefixes, `required`, and the checks that catch a manifest's mistakes.

use std::path::Path;

use toolhost::sandbox::LimitsConfig;
use toolhost::units::ByteSize;
use toolhost::{CallContext, ComponentConfig, ErrorKind, Host, HostError, Runtime, RuntimeConfig};
use toolhost_tests::components::{CALCULATOR, CLOCK, NOT_A_TOOL};
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::runtime;

fn write_manifest(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, text).expect("written");
    path
}

async fn host(text: &str) -> Result<Host, HostError> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let manifest = write_manifest(dir.path(), text);
    Host::builder()
        .runtime(runtime())
        .manifest(manifest)
        .build()
        .await
}

#[tokio::test]
async fn the_manifests_loop_settings_reach_the_agent_options() {
    let host = host(&format!(
        "[components.calculator]\npath = {CALCULATOR:?}\n\n\
         [model]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         temperature = 0.25\nmax_tokens = 77\nmax_rounds = 3\nsystem = \"Be brief.\"\n\n\
         [tools.square_root]\nreturn_direct = true\n"
    ))
    .await
    .expect("the host loads");
    let options = host.agent_options();
    assert_eq!(options.temperature, Some(0.25));
    assert_eq!(options.max_tokens, Some(77));
    assert_eq!(options.max_rounds, 3);
    assert_eq!(options.system.as_deref(), Some("Be brief."));
    assert!(options.stop_at.contains("square_root"));
    assert_eq!(
        host.model_config().base_url.as_deref(),
        Some("http://127.0.0.1:9/v1")
    );
    let output = host
        .call("add", r#"{"a": 1, "b": 2}"#, &CallContext::default())
        .await
        .expect("add runs");
    assert_eq!(output.text, "3.0");
}

#[tokio::test]
async fn options_for_a_tool_that_is_not_loaded_are_an_error_that_lists_the_tools() {
    let error = host(&format!(
        "[components.calculator]\npath = {CALCULATOR:?}\n\n[tools.square_roots]\nreturn_direct = true\n"
    ))
    .await
    .err()
    .expect("a typo in [tools.NAME] is caught");
    assert_error_chain_contains(&error, "[tools.square_roots]");
    assert_error_chain_contains(&error, "square_root");
}

#[tokio::test]
async fn prefixes_and_tool_lists_choose_what_is_offered() {
    let host = host(&format!(
        "[components.calculator]\npath = {CALCULATOR:?}\nprefix = \"calc_\"\nexclude = [\"multiply\"]\n\n\
         [components.clock]\npath = {CLOCK:?}\ntools = [\"current_time\"]\n"
    ))
    .await
    .expect("the host loads");
    assert_eq!(
        host.toolbox().names(),
        ["calc_add", "calc_square_root", "current_time"]
    );
    let output = host
        .call("calc_add", r#"{"a": 2, "b": 2}"#, &CallContext::default())
        .await
        .expect("a prefixed tool runs under its new name");
    assert_eq!(output.text, "4.0");
    let error = host
        .call(
            "calc_multiply",
            r#"{"a": 2, "b": 2}"#,
            &CallContext::default(),
        )
        .await
        .expect_err("an excluded tool is not offered");
    assert_eq!(error.kind(), ErrorKind::UnknownTool);
    let error = host
        .call("calc_square_root", r#"{"x": -1}"#, &CallContext::default())
        .await
        .expect_err("a negative square root is refused by the tool");
    // Errors name the tool as the model sees it.
    assert_error_chain_contains(&error, "`calc_square_root`");
}

#[tokio::test]
async fn a_tools_list_naming_a_missing_tool_is_an_error() {
    let error = host(&format!(
        "[components.calculator]\npath = {CALCULATOR:?}\ntools = [\"divide\"]\n"
    ))
    .await
    .err()
    .expect("an unknown tool in `tools` is caught");
    assert_error_chain_contains(&error, "has no tool `divide`");
    assert_error_chain_contains(&error, "square_root");
}

#[tokio::test]
async fn a_prefix_resolves_a_name_clash() {
    let clash = host(&format!(
        "[components.a]\npath = {CALCULATOR:?}\n\n[components.b]\npath = {CALCULATOR:?}\n"
    ))
    .await
    .err()
    .expect("two tools named add clash");
    assert_error_chain_contains(&clash, "component `a`");
    assert_error_chain_contains(&clash, "component `b`");
    assert_error_chain_contains(&clash, "prefix"); // the fix is named
    let host = host(&format!(
        "[components.a]\npath = {CALCULATOR:?}\n\n[components.b]\npath = {CALCULATOR:?}\nprefix = \"b_\"\n"
    ))
    .await
    .expect("a prefix resolves it");
    assert!(host.toolbox().names().contains(&"b_add".to_owned()));
}

#[tokio::test]
async fn a_component_that_is_not_required_is_left_out_when_it_fails() {
    let host = host(&format!(
        "[components.calculator]\npath = {CALCULATOR:?}\n\n\
         [components.broken]\npath = {NOT_A_TOOL:?}\nrequired = false\n"
    ))
    .await
    .expect("the others load");
    assert_eq!(host.toolbox().names(), ["add", "multiply", "square_root"]);
    let skipped = host.toolbox().skipped();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].name, "broken");
    assert_error_chain_contains(&skipped[0].error, "not-a-tool.wasm");

    let error = host_required_broken().await;
    assert_error_chain_contains(&error, "not-a-tool.wasm");
}

async fn host_required_broken() -> HostError {
    host(&format!(
        "[components.calculator]\npath = {CALCULATOR:?}\n\n[components.broken]\npath = {NOT_A_TOOL:?}\n"
    ))
    .await
    .err()
    .expect("a required component that fails fails the load")
}

#[tokio::test]
async fn builder_limits_apply_over_the_manifests() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let manifest = write_manifest(
        dir.path(),
        &format!("[components.calculator]\npath = {CALCULATOR:?}\nlimits.memory = \"64MiB\"\n"),
    );
    let host = Host::builder()
        .runtime(runtime())
        .manifest(manifest)
        .component(ComponentConfig::new(CLOCK))
        .limits(LimitsConfig {
            memory: Some(ByteSize(16 << 20)),
            ..LimitsConfig::default()
        })
        .build()
        .await
        .expect("the host loads");
    let memories: Vec<u64> = host
        .toolbox()
        .components()
        .map(|c| c.limits().memory)
        .collect();
    assert_eq!(memories, [16 << 20, 16 << 20]);
}

#[tokio::test]
async fn compiled_code_owned_by_another_user_is_refused() {
    // Only root can give a file away.
    // SAFETY: geteuid has no preconditions.
    #[allow(unsafe_code)]
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped: only root can give a file to another user");
        return;
    }
    let cache = tempfile::tempdir().expect("a temporary directory");
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.path().join("components")),
        ..RuntimeConfig::default()
    })
    .expect("a runtime");
    let load = || {
        Host::builder()
            .runtime(runtime.clone())
            .component(ComponentConfig::new(CALCULATOR))
            .build()
    };
    load().await.expect("compiles into the cache");
    let entry = std::fs::read_dir(cache.path().join("components"))
        .expect("the cache exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .expect("a compiled entry");
    std::os::unix::fs::chown(&entry, Some(65534), Some(65534)).expect("chown as root");
    let host = load().await.expect("the tools come from the cache");
    let error = host
        .call("add", r#"{"a": 1, "b": 2}"#, &CallContext::default())
        .await
        .expect_err("the code is refused");
    assert_error_chain_contains(&error, "refusing to load compiled code");
    assert_error_chain_contains(&error, &entry.display().to_string());
    assert_error_chain_contains(&error, "owned by user 65534");
}
