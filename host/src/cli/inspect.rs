//! `host inspect`: what a component offers.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};
use toolhost::units::format_bytes;
use toolhost::{CompileSource, ComponentConfig, LoadedComponent, Runtime, ToolSpec};

use super::ExitStatus;
use super::output::{print, print_json};

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The component file (.wasm), or oci://REGISTRY/REPO:TAG (pulled into the cache)
    component: PathBuf,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

impl InspectArgs {
    pub async fn run(self, runtime: &Runtime) -> anyhow::Result<ExitStatus> {
        let config = ComponentConfig::new(&self.component);
        let component = LoadedComponent::load(runtime, config).await?;
        if self.json {
            print_json(&to_json(&component))?;
        } else {
            print(&to_text(&component))?;
        }
        Ok(ExitStatus::Success)
    }
}

fn to_json(component: &LoadedComponent) -> Value {
    let mut json = json!({
        "path": component.path(),
        "sha256": component.sha256(),
        "size": component.size(),
        "contract": component.contract(),
        "offers": component.offered(),
        "compile": component.compile_source(),
        "load_ms": component.load_time().as_secs_f64() * 1000.0,
        "imports": component.imports(),
        "tools": component.tools().collect::<Vec<_>>(),
    });
    add_pulled(component, &mut json);
    json
}

/// One line about where the component came from and how long loading took.
pub fn load_summary(component: &LoadedComponent) -> String {
    let source = match component.compile_source() {
        CompileSource::Cache => "from the compile cache".to_owned(),
        CompileSource::Compiled { took } => format!("compiled in {:.2} s", took.as_secs_f64()),
    };
    format!(
        "{}, {source}, loaded in {:.0} ms{}",
        format_bytes(component.size()),
        component.load_time().as_secs_f64() * 1000.0,
        pulled_summary(component)
    )
}

/// `, DIGEST, signature verified, ...` for a component pulled from a registry; nothing for a
/// file.
#[cfg(feature = "oci")]
fn pulled_summary(component: &LoadedComponent) -> String {
    let Some(pulled) = component.pulled() else {
        return String::new();
    };
    format!(
        ", {}{}{}",
        pulled.digest,
        if pulled.verified {
            ", signature verified"
        } else {
            ""
        },
        if pulled.offline {
            ", from the cache (registry not reached)"
        } else {
            ""
        },
    )
}

/// Without the `oci` feature every component is a file.
#[cfg(not(feature = "oci"))]
fn pulled_summary(_: &LoadedComponent) -> String {
    String::new()
}

/// What was pulled, for a component from an OCI registry, added to its JSON as `oci` (no key
/// for a file).
#[cfg(feature = "oci")]
pub fn add_pulled(component: &LoadedComponent, json: &mut Value) {
    if let (Some(pulled), Some(object)) = (component.pulled(), json.as_object_mut()) {
        object.insert(
            "oci".to_owned(),
            json!({
                "reference": pulled.reference.to_string(),
                "digest": pulled.digest,
                "file": pulled.path,
                "signature_verified": pulled.verified,
                "from_cache": pulled.offline,
            }),
        );
    }
}

/// Without the `oci` feature every component is a file: no `oci` key.
#[cfg(not(feature = "oci"))]
pub fn add_pulled(_: &LoadedComponent, _: &mut Value) {}

fn to_text(component: &LoadedComponent) -> String {
    let mut out = String::new();
    let tools: Vec<&ToolSpec> = component.tools().collect();
    let _ = writeln!(
        out,
        "{}: {} tool{} ({})",
        component.path().display(),
        tools.len(),
        if tools.len() == 1 { "" } else { "s" },
        load_summary(component)
    );
    let _ = writeln!(out, "contract: {}", component.contract());
    let _ = writeln!(out, "imports: {}", component.imports().join(", "));
    for tool in tools {
        let _ = writeln!(out);
        out.push_str(&describe_tool(tool));
    }
    let offers = component.offered();
    let lines = offers
        .resources
        .iter()
        .map(|r| {
            format!(
                "resource {}  {}",
                r.uri,
                r.description.as_deref().unwrap_or("")
            )
        })
        .chain(offers.templates.iter().map(|t| {
            format!(
                "resource template {}  {}",
                t.uri_template,
                t.description.as_deref().unwrap_or("")
            )
        }))
        .chain(offers.prompts.iter().map(|p| {
            let arguments: Vec<&str> = p.arguments.iter().map(|a| a.name.as_str()).collect();
            format!(
                "prompt {}({})  {}",
                p.name,
                arguments.join(", "),
                p.description.as_deref().unwrap_or("")
            )
        }));
    for (at, line) in lines.enumerate() {
        if at == 0 {
            let _ = writeln!(out);
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// A tool's name, description, arguments and requests, indented for a terminal.
pub fn describe_tool(tool: &ToolSpec) -> String {
    let mut out = String::new();
    match &tool.annotations.title {
        Some(title) => {
            let _ = writeln!(out, "{} ({title})", tool.name);
        }
        None => {
            let _ = writeln!(out, "{}", tool.name);
        }
    }
    for line in tool.description.lines() {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(out, "  arguments:");
    out.push_str(&describe_arguments(&tool.input_schema));
    if let Some(output) = &tool.output_schema {
        let _ = writeln!(out, "  result: {}", type_of(output));
    }
    let hints = hints(&tool.annotations);
    if !hints.is_empty() {
        let _ = writeln!(out, "  says it is: {}", hints.join(", "));
    }
    if tool.requested.is_empty() {
        let _ = writeln!(out, "  requests: nothing");
    } else {
        let _ = writeln!(out, "  requests:");
        for request in &tool.requested {
            let reason = if request.reason.is_empty() {
                String::new()
            } else {
                format!(" ({})", request.reason)
            };
            let _ = writeln!(out, "    {}{reason}", request.capability);
        }
    }
    out
}

/// What a tool's annotations say about it, in words.
fn hints(annotations: &toolhost::ToolAnnotations) -> Vec<&'static str> {
    let said = |flag: Option<bool>, yes: &'static str, no: &'static str| {
        flag.map(|flag| if flag { yes } else { no })
    };
    [
        said(annotations.read_only, "read-only", "not read-only"),
        said(annotations.destructive, "destructive", "not destructive"),
        said(annotations.idempotent, "idempotent", "not idempotent"),
        said(annotations.open_world, "open-world", "closed-world"),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn describe_arguments(schema: &Value) -> String {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return "    (none)\n".to_owned();
    };
    if properties.is_empty() {
        return "    (none)\n".to_owned();
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let width = properties.keys().map(String::len).max().unwrap_or(0);
    let mut out = String::new();
    for (name, property) in properties {
        let needed = if required.contains(&name.as_str()) {
            "required"
        } else {
            "optional"
        };
        let description = property
            .get("description")
            .and_then(Value::as_str)
            .map(|d| format!("  {d}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "    {name:width$}  {}, {needed}{description}",
            type_of(property)
        );
    }
    out
}

/// A short type for a schema: `number`, `string`, `array of string`, `one of "a", "b"`.
fn type_of(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values.iter().map(Value::to_string).collect();
        return format!("one of {}", values.join(", "));
    }
    match schema.get("type") {
        Some(Value::String(ty)) if ty == "array" => match schema.get("items") {
            Some(items) => format!("array of {}", type_of(items)),
            None => "array".to_owned(),
        },
        Some(Value::String(ty)) => ty.clone(),
        Some(Value::Array(types)) => {
            let types: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            types.join(" or ")
        }
        _ => "any".to_owned(),
    }
}
