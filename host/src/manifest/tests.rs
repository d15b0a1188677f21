use super::*;
use crate::sandbox::{EnvGrant, HostPattern, Limits};
use crate::spec::ToolAnnotations;

const EXAMPLE: &str = r#"
    [limits]
    memory = "64MiB"

    [components.weather]
    path = "dist/weather.wasm"
    grants.http = ["wttr.in", "*.example.com"]
    grants.env = ["WEATHER_BASE_URL=http://127.0.0.1:8080", "HOME"]
    required = false

    [components.files]
    path = "/abs/files.wasm"
    grants.dirs = [{ host = "data", guest = "/data" }, { host = "/n", guest = "/notes", write = true }]
    limits = { memory = "32MiB", timeout = "2s" }
    tools = ["read_file"]
    prefix = "fs_"

    [model]
    provider = "openai"
    base_url = "http://127.0.0.1:1234/v1"
    temperature = 0
    max_rounds = 4
    system = "Be brief."

    [tools.fs_read_file]
    return_direct = true
"#;

fn parse(text: &str) -> Result<Manifest, ManifestError> {
    Manifest::parse(text, Path::new("/etc/tools/toolhost.toml"))
}

#[test]
fn paths_resolve_against_the_manifest_and_limits_combine() {
    let manifest = parse(EXAMPLE).unwrap_or_else(|e| panic!("{e:?}"));
    let configs = crate::engine::component::ComponentConfig::from_manifest(&manifest);
    let files = &configs[0];
    assert_eq!(files.name, "files");
    assert_eq!(files.path, PathBuf::from("/abs/files.wasm"));
    assert_eq!(files.grants.dirs[0].host, PathBuf::from("/etc/tools/data"));
    assert!(files.grants.dirs[1].write);
    assert_eq!(files.limits.memory, 32 << 20);
    assert_eq!(files.limits.timeout, std::time::Duration::from_secs(2));
    assert_eq!(files.options.prefix, "fs_");
    assert!(files.required);

    let weather = &configs[1];
    assert_eq!(weather.path, PathBuf::from("/etc/tools/dist/weather.wasm"));
    assert_eq!(weather.limits.memory, 64 << 20);
    assert_eq!(weather.limits.cpu_time, Limits::default().cpu_time);
    assert_eq!(
        weather.grants.http[1],
        "*.example.com".parse::<HostPattern>().unwrap()
    );
    assert_eq!(weather.grants.env[1], EnvGrant::Inherit("HOME".into()));
    assert!(!weather.required);
}

#[test]
fn the_model_section_holds_the_model_and_the_loop() {
    let manifest = parse(EXAMPLE).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        manifest.model.base_url.as_deref(),
        Some("http://127.0.0.1:1234/v1")
    );
    assert_eq!(manifest.model.temperature, Some(0.0));
    assert_eq!(manifest.model.max_rounds, Some(4));
    assert_eq!(manifest.model.system.as_deref(), Some("Be brief."));
    assert_eq!(
        manifest.return_direct_tools(),
        BTreeSet::from(["fs_read_file".to_owned()])
    );
}

#[test]
fn every_model_key_is_read() {
    let text = r#"
        [model]
        provider = "anthropic"
        name = "m"
        base_url = "http://127.0.0.1:1"
        api_key_env = "K"
        api_key = "k"
        timeout = "5s"
        max_retries = 1
        format = "anthropic"
        temperature = 0.5
        max_tokens = 100
        max_rounds = 3
        system = "s"
        stream = false
        stop_at = ["add"]
        max_parallel_calls = 2
        max_calls_per_turn = 8
        tool_limit = 4
    "#;
    let manifest = parse(text).unwrap_or_else(|e| panic!("{e:?}"));
    // Each key set in the text is read: the model client's part and the loop's part
    // together hold one value per key.
    let model = crate::llm::ModelConfig::from(&manifest.model);
    assert!(model.provider.is_some() && model.name.is_some() && model.base_url.is_some());
    assert!(model.api_key_env.is_some() && model.api_key.is_some() && model.timeout.is_some());
    assert!(model.max_retries.is_some() && model.format.is_some());
    let agent = crate::agent::AgentConfig::from(&manifest.model);
    assert!(agent.temperature.is_some() && agent.max_tokens.is_some());
    assert!(agent.max_rounds.is_some() && agent.system.is_some() && agent.stream.is_some());
    assert!(agent.stop_at.is_some() && agent.max_parallel_calls.is_some());
    assert!(agent.max_calls_per_turn.is_some());
    assert_eq!(agent.tool_limit, Some(model::ToolLimit::Top(4)));
    let keys_in_text = text.lines().filter(|l| l.contains(" = ")).count();
    let debug = format!("{:?}", manifest.model);
    assert_eq!(
        debug.matches(": Some(").count(),
        keys_in_text,
        "every key the test sets is a field of [model]: {debug}"
    );
}

#[test]
fn unknown_keys_are_errors_that_name_the_key() {
    for (text, key) in [
        (
            "[components.a]\npath = \"a.wasm\"\ngrants.htp = [\"x\"]\n",
            "htp",
        ),
        ("[model]\ntemprature = 0\n", "temprature"),
        ("[tools.add]\nreturn_directly = true\n", "return_directly"),
    ] {
        let error = parse(text).unwrap_err();
        let text = format!("{:#}", anyhow::Error::from(error));
        assert!(text.contains(&format!("unknown field `{key}`")), "{text}");
        assert!(text.contains("toolhost.toml"), "{text}");
    }
}

#[test]
fn bad_values_say_how_to_write_them() {
    let error = parse("[components.a]\npath = \"a.wasm\"\ngrants.http = [\"https://x.com\"]\n")
        .unwrap_err();
    let text = format!("{:#}", anyhow::Error::from(error));
    assert!(text.contains("without scheme"), "{text}");
    let error = parse("[model]\nmax_rounds = \"ten\"\n").unwrap_err();
    let text = format!("{:#}", anyhow::Error::from(error));
    assert!(
        text.contains("max_rounds") || text.contains("invalid type"),
        "{text}"
    );
}

#[test]
fn approval_error_and_audit_settings_are_read() {
    let manifest = parse(
        r#"
        [tools.write_note]
        approval = "always"
        on_error = "fail_run"
        [tools.read_file]
        approval = "never"
        [approval]
        ask_for = ["write-dir", "http", "unsandboxed"]
        [audit]
        path = "logs/audit.jsonl"
        "#,
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    let rules = crate::agent::ApprovalRules::from_manifest(&manifest);
    assert_eq!(rules.tools["write_note"], ApprovalMode::Always);
    assert_eq!(rules.tools["read_file"], ApprovalMode::Never);
    assert_eq!(
        rules.ask_for,
        BTreeSet::from([AskFor::WriteDir, AskFor::Http, AskFor::Unsandboxed])
    );
    assert_eq!(
        manifest.fail_run_tools(),
        BTreeSet::from(["write_note".to_owned()])
    );
    assert_eq!(
        manifest.audit_path(),
        Some(PathBuf::from("/etc/tools/logs/audit.jsonl"))
    );
}

#[cfg(feature = "mcp-client")]
#[test]
fn mcp_servers_take_the_manifest_limits_as_defaults() {
    let text = r#"
        [limits]
        timeout = "7s"
        max_result = "2MiB"

        [mcp_servers.time]
        command = ["mcp-server-time"]

        [mcp_servers.remote]
        url = "http://127.0.0.1:9/mcp"
        headers = { Authorization = "Bearer ${TOKEN}" }
        timeout = "1s"
        required = false
    "#;
    let manifest = parse(text).unwrap_or_else(|e| panic!("{e:?}"));
    let configs = crate::mcp::client::McpServerConfig::from_manifest(&manifest);
    let remote = &configs[0];
    assert_eq!(remote.name, "remote");
    assert_eq!(remote.timeout, std::time::Duration::from_secs(1));
    assert_eq!(remote.max_result, 2 << 20);
    assert!(!remote.required);
    let time = &configs[1];
    assert_eq!(time.timeout, std::time::Duration::from_secs(7));
    assert!(time.required);
    let error = parse("[mcp_servers.x]\ncommand = [\"a\"]\nurl = \"http://x/mcp\"\n").unwrap_err();
    let text = format!("{:#}", anyhow::Error::from(error));
    assert!(
        text.contains("not both") && text.contains("mcp_servers"),
        "{text}"
    );
}

#[test]
fn bad_approval_and_loop_values_name_what_is_accepted() {
    for (text, expected) in [
        (
            "[tools.a]\napproval = \"sometimes\"\n",
            "expected `always` or `never`",
        ),
        (
            "[tools.a]\non_error = \"ignore\"\n",
            "expected `to_model` or `fail_run`",
        ),
        ("[approval]\nask_for = [\"disk\"]\n", "`write-dir`"),
        ("[approval]\nask = [\"http\"]\n", "unknown field `ask`"),
        ("[audit]\nfile = \"a\"\n", "unknown field `file`"),
        ("[model]\nmax_parallel_calls = 0\n", "nonzero"),
    ] {
        let error = parse(text).unwrap_err();
        let message = format!("{:#}", anyhow::Error::from(error));
        assert!(message.contains(expected), "{text}: {message}");
    }
}

#[test]
fn annotations_and_the_mcp_section_are_read() {
    let manifest = parse(
        "[tools.list_files]\nannotations = { read_only = true, open_world = false, title = \"List\" }\n\n\
         [mcp]\npass_meta = [\"tenant\", \"user_id\"]\n",
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        manifest.tools["list_files"].annotations,
        Some(ToolAnnotations {
            title: Some("List".into()),
            read_only: Some(true),
            open_world: Some(false),
            ..ToolAnnotations::default()
        })
    );
    assert_eq!(
        manifest.mcp.pass_meta,
        BTreeSet::from(["tenant".to_owned(), "user_id".to_owned()])
    );
    for (text, key) in [
        (
            "[tools.a]\nannotations = { readOnlyHint = true }\n",
            "readOnlyHint",
        ),
        ("[mcp]\nmeta = [\"tenant\"]\n", "meta"),
    ] {
        let error = parse(text).unwrap_err();
        let text = format!("{:#}", anyhow::Error::from(error));
        assert!(text.contains(&format!("unknown field `{key}`")), "{text}");
    }
}

#[test]
fn a_missing_manifest_says_where_to_find_one() {
    let error = Manifest::load(Path::new("/surely/not/here.toml")).unwrap_err();
    assert!(matches!(error, ManifestError::NotFound { .. }));
    assert!(error.to_string().contains("example-tools/toolhost.toml"));
}

#[cfg(feature = "oci")]
#[test]
fn a_keyless_verify_is_refused_with_why_and_a_key_is_read() {
    let keyless = "[components.calc]\npath = \"oci://r.example/calc:1\"\n\
                   verify = { identity = \"me@example.com\", issuer = \"https://accounts.example\" }\n";
    let error = Manifest::parse(keyless, Path::new("toolhost.toml")).expect_err("keyless");
    let chain = format!("{:#}", anyhow::Error::from(error));
    assert!(chain.contains("keyless verification"), "{chain}");
    assert!(chain.contains("verify = { key ="), "{chain}");
    let keyed = "[oci]\nrequire_signatures = true\n[oci.registries.\"r.example\"]\n\
                 verify = { key = \"keys/acme.pub\" }\n[components.calc]\npath = \"oci://r.example/calc:1\"\n";
    let manifest = Manifest::parse(keyed, Path::new("dir/toolhost.toml")).expect("parses");
    let policy = crate::oci::policy_for(&manifest, &manifest.components["calc"]);
    assert_eq!(policy.key, Some(PathBuf::from("dir/keys/acme.pub")));
    assert!(policy.require_signature);
    assert_eq!(policy.lock, Some(PathBuf::from("dir/toolhost.lock")));
}

#[test]
fn a_secret_written_into_a_manifest_is_refused_without_showing_it() {
    let text = "[mcp_servers.notes]\nurl = \"https://notes.example/mcp\"\n\
                auth = { client_id = \"th\", client_secret = \"hunter2-very-secret\" }\n";
    let error = parse(text).unwrap_err();
    let chain = format!("{:#}", anyhow::Error::from(error));
    assert!(chain.contains("line 3"), "{chain}");
    assert!(chain.contains("${NAME}"), "{chain}");
    assert!(!chain.contains("hunter2"), "{chain}");
}

#[test]
fn which_tools_run_as_tasks_and_how_tasks_are_kept_are_read() {
    let manifest = parse(
        "[tools.build]\ntask = \"required\"\n\n[tools.crawl]\ntask = \"after_input\"\n\n\
         [mcp.tasks]\nttl = \"10m\"\npoll_interval = \"250ms\"\nmax_per_caller = 4\n",
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(manifest.tools["build"].task, TaskSupport::Required);
    assert_eq!(manifest.tools["crawl"].task, TaskSupport::AfterInput);
    let tasks = manifest.mcp.tasks;
    assert_eq!(tasks.ttl.0, std::time::Duration::from_secs(600));
    assert_eq!(tasks.poll_interval.0, std::time::Duration::from_millis(250));
    assert_eq!((tasks.max_per_caller, tasks.max), (4, 1024));
    // Without the section: an hour, a second, 64 and 1024; no tool runs as a task.
    let plain = parse("[tools.build]\nreturn_direct = true\n").unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(plain.tools["build"].task, TaskSupport::Never);
    assert_eq!(plain.mcp.tasks, TasksSection::default());
    assert_eq!(plain.mcp.tasks.ttl.0, std::time::Duration::from_secs(3600));
    for (text, expected) in [
        ("[tools.a]\ntask = \"always\"\n", "unknown variant `always`"),
        ("[mcp.tasks]\nttl = \"soon\"\n", "`soon` is not a duration"),
        ("[mcp.tasks]\nlease = \"1s\"\n", "unknown field `lease`"),
    ] {
        let error = parse(text).unwrap_err();
        let message = format!("{:#}", anyhow::Error::from(error));
        assert!(message.contains(expected), "{text}: {message}");
    }
}
