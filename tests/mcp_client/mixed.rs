//! The three kinds of source in one loop: a sandboxed component, an MCP server and native
//! functions of the application; names unique across them, a clash naming both origins.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost::llm::{ModelConfig, ProviderKind};
use toolhost::mcp::client::McpServerConfig;
use toolhost::{
    CallContext, ComponentConfig, Host, HostError, Manifest, NativeTools, SourceOptions,
};
use toolhost_tests::components::CALCULATOR;
use toolhost_tests::error::chain;
use toolhost_tests::model::{Format, ScriptedModel, call, calls, text};
use toolhost_tests::peers::peers;
use toolhost_tests::{repo_root, runtime};

use super::patient;

/// The order to look up.
#[derive(Deserialize, JsonSchema)]
struct Order {
    /// Its number.
    id: u32,
}

fn shop() -> NativeTools {
    NativeTools::new("shop").tool_with_context(
        "order_status",
        "The shipping status of an order.",
        async |order: Order, context: CallContext| {
            let tenant = context.values.get("tenant").cloned().unwrap_or_default();
            Ok::<_, String>(format!("order {} of {tenant} has shipped", order.id))
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_an_mcp_server_and_native_functions_serve_one_loop() {
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![
                call("c1", "square_root", r#"{"x": 475695037565}"#),
                call("c2", "get_current_time", r#"{"timezone": "Asia/Tokyo"}"#),
                call("c3", "order_status", r#"{"id": 1042}"#),
            ]),
            text("All three answered."),
        ],
    )
    .await;
    let host = Host::builder()
        .runtime(runtime())
        .component(ComponentConfig::new(CALCULATOR))
        .mcp_server(patient(McpServerConfig::stdio(
            "time",
            peers().time_server(),
        )))
        .native(shop())
        .model(ModelConfig {
            provider: Some(ProviderKind::OpenAi),
            base_url: Some(model.base_url()),
            ..ModelConfig::default()
        })
        .build()
        .await
        .unwrap_or_else(|e| panic!("{}", chain(&e)));

    let catalog = host.toolbox().catalog();
    let sandboxed = |name: &str| catalog.origin(name).unwrap().is_sandboxed();
    assert!(sandboxed("square_root"));
    assert!(!sandboxed("get_current_time"));
    assert!(!sandboxed("order_status"));

    let agent = host.agent().await.unwrap();
    let mut conversation = toolhost::agent::Conversation::new();
    conversation.push_user("Three questions.");
    let options = toolhost::agent::RunOptions {
        context: [("tenant".to_owned(), "acme".to_owned())].into(),
        ..Default::default()
    };
    let result = agent
        .run(&mut conversation, &options, &mut |_| {})
        .await
        .unwrap();
    let outputs: Vec<&str> = result
        .executions
        .iter()
        .map(|e| e.output.as_str())
        .collect();
    assert_eq!(outputs[0], "689706.4865324959");
    assert!(outputs[1].contains("Asia/Tokyo"), "{outputs:?}");
    assert_eq!(outputs[2], "order 1042 of acme has shipped");
    assert_eq!(result.text, "All three answered.");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_clash_names_both_origins_and_a_prefix_resolves_it() {
    let adder = || {
        NativeTools::new("shop").tool("add", "Adds to the basket.", async |order: Order| {
            Ok::<_, String>(format!("added {}", order.id))
        })
    };
    let error = Host::builder()
        .runtime(runtime())
        .component(ComponentConfig::new(CALCULATOR))
        .native(adder())
        .build()
        .await
        .err()
        .expect("two tools named add");
    let HostError::Load(error) = &error else {
        panic!("{error}");
    };
    let text = error.to_string();
    assert!(text.contains("component `calculator`"), "{text}");
    assert!(text.contains("native tools `shop`"), "{text}");
    assert!(text.contains("prefix"), "it says how to fix it: {text}");

    let host = Host::builder()
        .runtime(runtime())
        .component(ComponentConfig::new(CALCULATOR))
        .source(
            Arc::new(adder()),
            SourceOptions {
                prefix: "basket_".into(),
                ..SourceOptions::default()
            },
        )
        .build()
        .await
        .unwrap();
    let output = host
        .call("basket_add", r#"{"id": 7}"#, &CallContext::default())
        .await
        .unwrap();
    assert_eq!(output.text, "added 7");
    let sum = host
        .call("add", r#"{"a": 2, "b": 40}"#, &CallContext::default())
        .await
        .unwrap();
    assert_eq!(sum.text, "42.0");
}

/// The README's manifest that mixes the three kinds is a valid manifest with them all.
#[test]
fn the_readme_manifest_mixing_sources_is_valid() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let section = readme
        .split("\n## ")
        .find(|section| section.starts_with("Tools from anywhere"))
        .expect("README.md has a section \"Tools from anywhere\"");
    let toml = section
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("it shows a manifest");
    let manifest = Manifest::parse(toml, &repo_root().join("example-tools/toolhost.toml"))
        .unwrap_or_else(|e| panic!("{}", chain(&e)));
    assert!(!manifest.components.is_empty());
    let servers = McpServerConfig::from_manifest(&manifest);
    assert!(servers.iter().any(|s| matches!(
        s.transport,
        toolhost::mcp::client::McpTransport::Stdio { .. }
    )));
    assert!(servers.iter().any(|s| matches!(
        s.transport,
        toolhost::mcp::client::McpTransport::Http { .. }
    )));
}

/// An image a tool returns stays an image in the conversation (the provider decides how to
/// send it), and the record of the call keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_result_reaches_the_conversation_as_an_image() {
    let model = ScriptedModel::start(
        Format::Anthropic,
        vec![calls(vec![call("c1", "image", "{}")]), text("A dot.")],
    )
    .await;
    let host = Host::builder()
        .runtime(runtime())
        .mcp_server(patient(McpServerConfig::stdio(
            "fake",
            peers().fake_server(&[]),
        )))
        .model(ModelConfig {
            provider: Some(ProviderKind::Anthropic),
            base_url: Some(model.base_url()),
            api_key: Some("test-key".into()),
            ..ModelConfig::default()
        })
        .build()
        .await
        .unwrap();
    let agent = host.agent().await.unwrap();
    let mut conversation = toolhost::agent::Conversation::new();
    conversation.push_user("Show me.");
    let result = agent
        .run(&mut conversation, &Default::default(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(result.executions[0].images().len(), 1);
    let images = conversation
        .messages()
        .iter()
        .find_map(|message| match message {
            toolhost::llm::Message::ToolResult {
                content, images, ..
            } => Some((content, images)),
            _ => None,
        })
        .expect("a tool result");
    assert_eq!(images.0, "a dot:");
    assert_eq!(images.1[0].mime_type, "image/png");
    // Anthropic takes images in tool results: the model gets an image block.
    let bodies = model.bodies();
    let result = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|block| block["type"] == "tool_result")
        .expect("the tool result was sent");
    assert_eq!(result["content"][0]["text"], "a dot:");
    assert_eq!(result["content"][1]["type"], "image", "{result}");
    assert_eq!(result["content"][1]["source"]["media_type"], "image/png");
    host.shutdown().await;
}
