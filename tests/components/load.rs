//! Loading components: describe output, the compile cache, and clear errors for files that
//! are not tool components.

use std::path::Path;

use toolhost::{
    CompileSource, ComponentConfig, LoadError, LoadedComponent, Runtime, RuntimeConfig, Toolbox,
};
use toolhost_tests::components::{
    BAD_SPEC, CALCULATOR, CLOCK, FILES, MCP_CONFORMANCE, NOT_A_TOOL, WEATHER,
};
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::{load, runtime};

async fn load_error(path: &Path) -> LoadError {
    let config = ComponentConfig::new(path);
    match LoadedComponent::load(&runtime(), config).await {
        Ok(_) => panic!("{} loaded, but it should not", path.display()),
        Err(error) => error,
    }
}

#[tokio::test]
async fn describe_gives_names_descriptions_and_schemas() {
    let toolbox = load(CALCULATOR, |_| {}).await;
    assert_eq!(toolbox.names(), ["add", "multiply", "square_root"]);
    let spec = toolbox
        .spec("square_root")
        .expect("square_root is described");
    assert!(
        spec.description.contains("square root"),
        "{}",
        spec.description
    );
    assert_eq!(spec.input_schema["type"], "object");
    assert_eq!(spec.input_schema["properties"]["x"]["type"], "number");
    assert_eq!(spec.input_schema["required"], serde_json::json!(["x"]));
    assert_eq!(
        spec.output_schema.as_ref().expect("an output schema")["type"],
        "number"
    );
    assert!(spec.requested.is_empty());
}

#[tokio::test]
async fn describe_reports_requested_capabilities() {
    let toolbox = load(WEATHER, |_| {}).await;
    let spec = toolbox.spec("current_weather").expect("described");
    let requested: Vec<String> = spec
        .requested
        .iter()
        .map(|r| r.capability.to_string())
        .collect();
    assert_eq!(requested, ["http wttr.in", "env WEATHER_BASE_URL"]);
    let component = toolbox.components().next().expect("a component");
    assert!(
        component
            .imports()
            .iter()
            .any(|i| i.starts_with("wasi:http/outgoing-handler"))
    );
}

#[tokio::test]
async fn the_second_load_comes_from_the_compile_cache() {
    let cache = tempfile::tempdir().expect("a temporary directory");
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.path().to_owned()),
        ..RuntimeConfig::default()
    })
    .expect("a runtime");
    let first = LoadedComponent::load(&runtime, ComponentConfig::new(CLOCK))
        .await
        .expect("clock loads");
    assert!(matches!(
        first.compile_source(),
        CompileSource::Compiled { .. }
    ));
    let compiled = std::fs::read_dir(cache.path())
        .expect("the cache exists")
        .filter(|entry| {
            entry
                .as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        })
        .count();
    assert_eq!(compiled, 1, "one compiled component in the cache");

    let second = LoadedComponent::load(&runtime, ComponentConfig::new(CLOCK))
        .await
        .expect("clock loads again");
    assert_eq!(second.compile_source(), CompileSource::Cache);
    assert_eq!(second.tools().count(), first.tools().count());
}

#[tokio::test]
async fn a_damaged_cache_entry_is_compiled_again() {
    let cache = tempfile::tempdir().expect("a temporary directory");
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.path().to_owned()),
        ..RuntimeConfig::default()
    })
    .expect("a runtime");
    LoadedComponent::load(&runtime, ComponentConfig::new(CALCULATOR))
        .await
        .expect("calculator loads");
    for entry in std::fs::read_dir(cache.path()).expect("the cache exists") {
        let path = entry.expect("an entry").path();
        if path.is_file() {
            std::fs::write(path, b"not a compiled component").expect("writable");
        }
    }
    let again = LoadedComponent::load(&runtime, ComponentConfig::new(CALCULATOR))
        .await
        .expect("calculator loads despite the damaged entry");
    assert!(matches!(
        again.compile_source(),
        CompileSource::Compiled { .. }
    ));
}

#[tokio::test]
async fn files_that_are_not_components_get_errors_that_say_what_they_are() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let core = dir.path().join("core.wasm");
    std::fs::write(&core, b"\0asm\x01\0\0\0").expect("writable");
    let error = load_error(&core).await;
    assert_error_chain_contains(&error, "core.wasm");
    assert_error_chain_contains(&error, "core WebAssembly module, not a component");

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "hello").expect("writable");
    let error = load_error(&text).await;
    assert_error_chain_contains(&error, "not a WebAssembly file");

    let error = load_error(&dir.path().join("missing.wasm")).await;
    assert_error_chain_contains(&error, "cannot read component");
    assert_error_chain_contains(&error, "missing.wasm");
}

#[tokio::test]
async fn a_component_for_another_world_is_rejected_with_what_it_exports() {
    let error = load_error(Path::new(NOT_A_TOOL)).await;
    assert_error_chain_contains(&error, "not-a-tool.wasm");
    assert_error_chain_contains(&error, "does not export `toolhost:tool/tools@0.2.0`");
    // It lists what the component exports.
    assert_error_chain_contains(&error, "wasi:cli/run");
}

#[tokio::test]
async fn a_tool_name_models_cannot_call_is_rejected() {
    let error = load_error(Path::new(BAD_SPEC)).await;
    assert_error_chain_contains(&error, "bad_spec.wasm");
    assert_error_chain_contains(&error, "tool `bad name!`");
    assert_error_chain_contains(&error, "letters, digits");
}

#[tokio::test]
async fn duplicate_tool_names_name_both_files() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let copy = dir.path().join("calculator-copy.wasm");
    std::fs::copy(CALCULATOR, &copy).expect("copied");
    let configs = vec![
        ComponentConfig::new(CALCULATOR),
        ComponentConfig::new(&copy),
    ];
    let Err(error) = Toolbox::builder(&runtime())
        .components(configs)
        .build()
        .await
    else {
        panic!("two components with the same tools loaded");
    };
    assert_error_chain_contains(&error, "tool `add`");
    assert_error_chain_contains(&error, "calculator.wasm");
    assert_error_chain_contains(&error, "calculator-copy.wasm");
}

#[tokio::test]
async fn a_missing_granted_directory_is_a_load_error() {
    let mut config = ComponentConfig::new(FILES);
    config.grants.dirs.push(toolhost::sandbox::DirGrant {
        host: "/definitely/not/here".into(),
        guest: "/data".into(),
        write: false,
    });
    let Err(error) = LoadedComponent::load(&runtime(), config).await else {
        panic!("loaded with a missing directory");
    };
    assert_error_chain_contains(&error, "component `files`");
    assert_error_chain_contains(&error, "/definitely/not/here");
}

#[tokio::test]
async fn components_built_for_contract_0_1_still_load_and_answer() {
    // `just tools` builds the C example against wit/0.1.0 too: the host adapts it.
    let old =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../example-tools/dist/checksum-c-0.1.wasm");
    let component = LoadedComponent::load(&runtime(), ComponentConfig::new(&old))
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", old.display()));
    assert_eq!(component.contract(), toolhost::Contract::V0_1);
    let toolbox = Toolbox::builder(&runtime())
        .component(ComponentConfig::new(&old))
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let output = toolbox
        .call("sha256", r#"{"text": "abc"}"#, &Default::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        output.text.contains("\"checksum\":\"ba7816bf"),
        "{}",
        output.text
    );
    assert!(output.content.is_empty(), "a 0.1 result is its text alone");
    toolbox.shutdown().await;
    let new = LoadedComponent::load(&runtime(), ComponentConfig::new(CALCULATOR))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(new.contract(), toolhost::Contract::V0_2);
    let add = new
        .tools()
        .find(|spec| spec.name == "add")
        .map(|spec| &spec.annotations);
    assert_eq!(add.and_then(|a| a.title.as_deref()), Some("Add"));
    assert_eq!(add.and_then(|a| a.read_only), Some(true));
}

#[tokio::test]
async fn a_components_resources_and_prompts_are_listed_read_and_filled_in() {
    let toolbox = Toolbox::builder(&runtime())
        .component(ComponentConfig::new(MCP_CONFORMANCE))
        .component(ComponentConfig::new(CALCULATOR))
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let offers = toolbox.offers();
    let uris: Vec<&str> = offers.resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "test://static-text",
            "test://static-binary",
            "test://watched-resource"
        ]
    );
    assert_eq!(
        offers.templates[0].uri_template,
        "test://template/{id}/data"
    );
    assert_eq!(offers.prompts.len(), 5);
    assert_eq!(offers.prompts[1].arguments[0].name, "arg1");

    let text = toolbox.read_resource("test://static-text").await.unwrap();
    assert!(
        text[0]
            .text
            .as_deref()
            .is_some_and(|t| t.contains("static text resource"))
    );
    let binary = toolbox.read_resource("test://static-binary").await.unwrap();
    assert!(
        binary[0]
            .blob
            .as_deref()
            .is_some_and(|b| b.starts_with("iVBORw0KGgo")),
        "a PNG"
    );
    let made = toolbox
        .read_resource("test://template/42/data")
        .await
        .unwrap();
    assert!(
        made[0]
            .text
            .as_deref()
            .is_some_and(|t| t.contains("Data for ID: 42"))
    );
    let missing = toolbox.read_resource("test://nothing").await.unwrap_err();
    assert!(
        matches!(&missing, toolhost::OfferError::NotFound(m) if m.contains("test://static-text")),
        "the error names the resources there are: {missing}"
    );

    let arguments = [
        ("arg1".to_owned(), "a".to_owned()),
        ("arg2".to_owned(), "b".to_owned()),
    ];
    let first_round = toolhost::PromptInput::default();
    let filled = toolbox
        .get_prompt(
            "test_prompt_with_arguments",
            &arguments.into_iter().collect(),
            &first_round,
        )
        .await
        .unwrap();
    let toolhost::PromptOutcome::Filled(filled) = filled else {
        panic!("the prompt asks for nothing: {filled:?}");
    };
    assert_eq!(
        filled.messages[0].content,
        toolhost::ContentPart::Text {
            text: "Prompt with arguments: arg1='a', arg2='b'".into()
        }
    );
    let wrong = toolbox
        .get_prompt(
            "test_prompt_with_arguments",
            &Default::default(),
            &first_round,
        )
        .await
        .unwrap_err();
    assert!(matches!(&wrong, toolhost::OfferError::InvalidArguments(m) if m.contains("arg1")));
    let values = toolbox
        .complete("test_prompt_with_arguments", "arg1", "pa")
        .await
        .unwrap();
    assert_eq!(values, ["paris", "park"]);
    toolbox.shutdown().await;
}

#[tokio::test]
async fn the_manifests_lists_choose_which_resources_and_prompts_are_offered() {
    let load = |configure: fn(&mut toolhost::SourceOptions)| async move {
        let mut config = ComponentConfig::new(MCP_CONFORMANCE);
        configure(&mut config.options);
        Toolbox::builder(&runtime()).component(config).build().await
    };
    let toolbox = load(|options| {
        options.resources = Some(["test://static-text".to_owned()].into());
        options.exclude_prompts = ["test_prompt_with_arguments".to_owned()].into();
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let offers = toolbox.offers();
    let uris: Vec<&str> = offers.resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["test://static-text"]);
    assert!(offers.templates.is_empty(), "not in the resources list");
    assert!(!offers.has_prompt("test_prompt_with_arguments"));
    assert!(!offers.prompts.is_empty(), "the other prompts stay");
    let excluded = toolbox.read_resource("test://static-binary").await;
    assert!(
        matches!(excluded, Err(toolhost::OfferError::NotFound(_))),
        "{excluded:?}"
    );

    let typo = load(|options| {
        options.exclude_resources = ["test://static-txt".to_owned()].into();
    })
    .await
    .err()
    .expect("a resource it does not offer is an error");
    let message = typo.to_string();
    assert!(
        message.contains("offers no resource `test://static-txt`")
            && message.contains("exclude_resources")
            && message.contains("test://static-text"),
        "{message}"
    );
}

/// A prompt may ask for input, as a tool may: the toolbox hands the request to whoever serves
/// the prompt, and fills the prompt in once it gets the answer back with the prompt's state.
#[tokio::test]
async fn a_prompt_that_asks_for_input_is_filled_in_with_the_answer() {
    let toolbox = Toolbox::builder(&runtime())
        .component(ComponentConfig::new(MCP_CONFORMANCE))
        .build()
        .await
        .unwrap();
    let prompt = "test_input_required_result_prompt";
    let no_arguments = Default::default();
    let asked = toolbox
        .get_prompt(prompt, &no_arguments, &toolhost::PromptInput::default())
        .await
        .unwrap();
    let toolhost::PromptOutcome::InputRequired(asked) = asked else {
        panic!("the prompt asks for a context first: {asked:?}");
    };
    let request = &asked.requests["user_context"];
    assert_eq!(request.method, "elicitation/create");
    assert_eq!(request.capability(), "elicitation");
    assert_eq!(
        request.params["requestedSchema"]["required"],
        serde_json::json!(["context"])
    );
    let answered = toolhost::PromptInput {
        input_responses: [(
            "user_context".to_owned(),
            serde_json::json!({ "action": "accept", "content": { "context": "release notes" } }),
        )]
        .into(),
        request_state: asked.state.clone(),
    };
    let filled = toolbox
        .get_prompt(prompt, &no_arguments, &answered)
        .await
        .unwrap();
    let toolhost::PromptOutcome::Filled(filled) = filled else {
        panic!("the prompt has its answer: {filled:?}");
    };
    assert_eq!(
        filled.messages[0].content,
        toolhost::ContentPart::Text {
            text: "Use this context: release notes".into()
        }
    );
    // Without the state it gave, the prompt refuses (the guest checks it comes back).
    let stateless = toolhost::PromptInput {
        request_state: None,
        ..answered
    };
    let refused = toolbox
        .get_prompt(prompt, &no_arguments, &stateless)
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, toolhost::OfferError::Failed(m) if m.contains("state came back")),
        "{refused}"
    );
    toolbox.shutdown().await;
}
