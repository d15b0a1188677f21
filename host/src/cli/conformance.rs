//! `host conformance-client URL`: toolhost as the client under test of the official MCP
//! conformance suite's client leg (`conformance client --command "host conformance-client"`).
//!
//! Hidden from `host --help`: it is for the suite, which starts one test server per scenario,
//! appends its URL to the command and names the scenario (`MCP_CONFORMANCE_SCENARIO`), the
//! revision to speak (`MCP_CONFORMANCE_PROTOCOL_VERSION`) and, for some scenarios, data such
//! as a client's credentials (`MCP_CONFORMANCE_CONTEXT`). It runs the code `host run` runs for
//! a manifest's `[mcp_servers]` entry: the server is connected and its tools listed as a
//! toolbox's source, and each tool is called through the toolbox, as the loop calls them,
//! with arguments made from its schema. What the server asks for during a call is answered
//! as a person who accepts every form with its defaults would.

use std::sync::Arc;

use anyhow::Context as _;
use clap::Args as ClapArgs;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use toolhost::mcp::client::auth::{AuthEntry, ClientIdentity, RunBrowser, ScriptedBrowser};
use toolhost::mcp::client::{McpClient, McpServerConfig};
use toolhost::{Ask, AskError, Asker, CallContext, InputRequest, Runtime, SourceOptions, Toolbox};

use super::ExitStatus;

#[derive(Debug, ClapArgs)]
pub struct ConformanceClientArgs {
    /// The test server's MCP endpoint (the suite appends it)
    url: String,
}

impl ConformanceClientArgs {
    pub async fn run(self, runtime: &Runtime) -> anyhow::Result<ExitStatus> {
        let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
        let scenario_context = scenario_context()?;
        let mut config = McpServerConfig::http("conformance", &self.url);
        config.protocol = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok();
        // A server that asks for authorization is logged in to by a script standing in for
        // the person's browser (the suite's authorization servers approve at once).
        config.auth = Some(client_identity(&scenario, &scenario_context));
        config.browser = Some(RunBrowser(Arc::new(ScriptedBrowser)));
        eprintln!(
            "scenario `{scenario}` at {} ({})",
            self.url,
            config.protocol.as_deref().unwrap_or("any revision")
        );
        let server = McpClient::connect(config)
            .await
            .with_context(|| format!("connecting to {}", self.url))?;
        let toolbox = Toolbox::builder(runtime)
            .source(Arc::new(server), SourceOptions::default())
            .build()
            .await?;
        let context = CallContext {
            asker: Some(Asker(Arc::new(AcceptsDefaults))),
            ..CallContext::default()
        };
        let mut failed = 0;
        for (name, arguments) in calls(&toolbox, &scenario_context) {
            match toolbox.call(&name, &arguments, &context).await {
                Ok(output) => eprintln!("{name} {arguments}: {}", output.text),
                Err(error) => {
                    failed += 1;
                    eprintln!("{name} {arguments} failed: {error}");
                }
            }
        }
        toolbox.shutdown().await;
        Ok(if failed == 0 {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        })
    }
}

/// What the suite says of the scenario (`MCP_CONFORMANCE_CONTEXT`), `{}` when it says
/// nothing.
fn scenario_context() -> anyhow::Result<Value> {
    match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => serde_json::from_str(&text).context("MCP_CONFORMANCE_CONTEXT is not JSON"),
        Err(_) => Ok(json!({})),
    }
}

/// Who the client is to the suite's authorization servers: the client the scenario
/// registered beforehand (`client_id`, `client_secret`; by its client credentials alone in
/// the client credentials scenario), else the suite's Client ID Metadata Document (dynamic
/// registration where the server does not take those).
fn client_identity(name: &str, scenario: &Value) -> AuthEntry {
    let field = |key: &str| scenario.get(key).and_then(Value::as_str);
    // A literal secret (`$` escaped): the `${NAME}` rule is the manifest's.
    let secret = field("client_secret").map(|secret| secret.replace('$', "$$"));
    let client = match (field("client_id"), secret) {
        (Some(client_id), Some(client_secret)) if name == "auth/client-credentials-basic" => {
            ClientIdentity::ClientCredentials {
                client_id: client_id.to_owned(),
                client_secret,
            }
        }
        (Some(client_id), client_secret) => ClientIdentity::Preregistered {
            client_id: client_id.to_owned(),
            client_secret,
        },
        (None, _) => ClientIdentity::MetadataDocument {
            url: "https://conformance-test.local/client-metadata.json".to_owned(),
        },
    };
    AuthEntry {
        client,
        scopes: Vec::new(),
    }
}

/// The calls to make: those the scenario names (`toolCalls`, with their arguments), else
/// each listed tool with arguments made from its schema.
fn calls(toolbox: &Toolbox, scenario: &Value) -> Vec<(String, String)> {
    if let Some(named) = scenario.get("toolCalls").and_then(Value::as_array) {
        return named
            .iter()
            .map(|call| {
                let name = call["name"].as_str().unwrap_or_default().to_owned();
                (name, call["arguments"].to_string())
            })
            .collect();
    }
    toolbox
        .specs()
        .into_iter()
        .map(|spec| {
            let arguments = sample(&spec.input_schema).to_string();
            (spec.name, arguments)
        })
        .collect()
}

/// A value `schema` accepts: its default or first choice where it has one, else the
/// simplest value of its type, with every required property of an object.
fn sample(schema: &Value) -> Value {
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|kind| *kind != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "null",
    };
    match kind {
        "object" => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut object = Map::new();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    if required.contains(&name.as_str()) {
                        object.insert(name.clone(), sample(property));
                    }
                }
            }
            Value::Object(object)
        }
        "number" | "integer" => json!(1),
        "string" => json!("test"),
        "boolean" => json!(true),
        "array" => json!([]),
        _ => Value::Null,
    }
}

/// Answers as a person who accepts every form as offered: each field its default, else the
/// simplest value of its type. Has no model to sample.
struct AcceptsDefaults;

impl Ask for AcceptsDefaults {
    fn ask<'a>(
        &'a self,
        asker: &'a str,
        request: &'a InputRequest,
    ) -> BoxFuture<'a, Result<Value, AskError>> {
        Box::pin(async move {
            match request.method.as_str() {
                "elicitation/create" => {
                    let schema = &request.params["requestedSchema"];
                    let mut content = Map::new();
                    if let Some(fields) = schema.get("properties").and_then(Value::as_object) {
                        for (name, field) in fields {
                            content.insert(name.clone(), sample(field));
                        }
                    }
                    eprintln!(
                        "{asker} asked; accepted with {}",
                        Value::Object(content.clone())
                    );
                    Ok(json!({ "action": "accept", "content": content }))
                }
                method => Err(AskError::Unsupported(format!(
                    "the conformance client answers forms only, not `{method}`"
                ))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_fills_what_the_schema_requires() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "name": {"type": "string", "default": "Ada"},
                "kind": {"enum": ["x", "y"]},
                "optional": {"type": "boolean"}
            },
            "required": ["a", "name", "kind"]
        });
        assert_eq!(sample(&schema), json!({"a": 1, "name": "Ada", "kind": "x"}));
    }
}
