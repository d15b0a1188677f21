//! Write [toolhost] tools in Rust.
//!
//! A tool is a typed function plus a description. The SDK derives the JSON Schema of its
//! arguments from their type, turns bad arguments into a clear invalid-arguments error for the
//! model, serializes the result, and exports everything as a WebAssembly component with one
//! macro. A component may offer several tools.
//!
//! # A complete tool component
//!
//! `Cargo.toml`:
//!
//! ```toml
//! [package]
//! name = "calculator"
//! edition = "2024"
//!
//! [lib]
//! crate-type = ["cdylib"]
//!
//! [dependencies]
//! toolhost-sdk = { path = "../guest-sdk" }
//! schemars = "1"
//! serde = { version = "1", features = ["derive"] }
//! ```
//!
//! `src/lib.rs`:
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use toolhost_sdk::{Tool, ToolError, Toolbox};
//!
//! /// The arguments of `square_root`. Doc comments become descriptions in the schema.
//! #[derive(Deserialize, JsonSchema)]
//! struct SquareRoot {
//!     /// The number to take the square root of; must not be negative.
//!     x: f64,
//! }
//!
//! fn square_root(args: SquareRoot) -> Result<f64, ToolError> {
//!     if args.x < 0.0 {
//!         return Err(ToolError::invalid_arguments("x must not be negative"));
//!     }
//!     Ok(args.x.sqrt())
//! }
//!
//! struct Calculator;
//!
//! impl Toolbox for Calculator {
//!     fn tools() -> Vec<Tool> {
//!         vec![Tool::new(
//!             "square_root",
//!             "Computes the square root of a number. Use it for any square root.",
//!             square_root,
//!         )]
//!     }
//! }
//!
//! toolhost_sdk::export!(Calculator);
//! # fn main() {
//! # let tool = &Calculator::tools()[0];
//! # let out = tool.call(r#"{"x": 475695037565}"#, &Default::default()).unwrap();
//! # let toolhost_sdk::Reply::Done(out) = out else { panic!() };
//! # assert!(out.text_parts().starts_with("689706.486532"));
//! # }
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2`; the `.wasm` file in
//! `target/wasm32-wasip2/release/` is the component. Try it without a model:
//!
//! ```text
//! host call target/wasm32-wasip2/release/calculator.wasm square_root '{"x": 2}'
//! ```
//!
//! # Capabilities
//!
//! A tool runs with nothing: no files, no environment variables, no network. What it needs
//! must be granted by whoever runs it (`host call --allow-http wttr.in ...`, or the manifest). A tool
//! can say what it would like with [`Tool::requests`]; the host shows those requests next to
//! the grants, and never grants them by itself. Outgoing HTTP goes through [`http`].
//!
//! [toolhost]: https://github.com/toolhost/toolhost
#![deny(missing_docs)]

extern crate self as toolhost_sdk;

#[doc(hidden)]
pub mod glue;
pub mod http;
mod offers;
mod output;
mod tool;

pub use offers::{
    Contents, Filled, Message, Offers, Part, Prompt, PromptArgument, PromptError, PromptReply,
    ReadError, Resource, ResourceTemplate, Role,
};
pub use output::{Content, Output, ResourceContents, report};
pub use tool::{Annotations, Ask, CallContext, Capability, Reply, Tool, ToolError};

/// The tools a component offers. Implement it on a unit struct and pass that struct to
/// [`export!`].
pub trait Toolbox {
    /// The component's tools. Called for every `describe` and every call, so it should only
    /// build the list (cheap), not do work.
    fn tools() -> Vec<Tool>;
}

/// Exports a [`Toolbox`] as the component's `toolhost:tool/tools` interface, and with
/// `offers = T` the resources and prompts of `T` ([`Offers`]) as its `resources` and
/// `prompts` interfaces.
///
/// Use it once per component, at the top level of the crate:
/// `toolhost_sdk::export!(Files);` or `toolhost_sdk::export!(Files, offers = Files);`. When
/// the crate is built for anything but wasm (its own unit tests), it exports nothing.
#[macro_export]
macro_rules! export {
    ($toolbox:ty) => {
        $crate::export!($toolbox, offers = $crate::__private::Nothing);
    };
    ($toolbox:ty, offers = $offers:ty) => {
        #[doc(hidden)]
        #[allow(dead_code)]
        struct __ToolhostExport;

        impl $crate::__private::Guest for __ToolhostExport {
            fn describe() -> ::std::vec::Vec<$crate::__private::ToolSpec> {
                $crate::__private::describe(<$toolbox as $crate::Toolbox>::tools())
            }

            fn call(
                name: ::std::string::String,
                arguments: ::std::string::String,
                context: $crate::__private::WitCallContext,
            ) -> ::std::result::Result<$crate::__private::WitOutcome, $crate::__private::WitToolError> {
                $crate::__private::call(
                    <$toolbox as $crate::Toolbox>::tools(),
                    &name,
                    &arguments,
                    context,
                )
            }
        }

        impl $crate::__private::offered::ResourcesGuest for __ToolhostExport {
            fn listed() -> ::std::vec::Vec<$crate::__private::offered::WitResource> {
                $crate::__private::offered::listed::<$offers>()
            }

            fn templates() -> ::std::vec::Vec<$crate::__private::offered::WitTemplate> {
                $crate::__private::offered::templates::<$offers>()
            }

            fn read(
                uri: ::std::string::String,
            ) -> ::std::result::Result<
                ::std::vec::Vec<$crate::__private::offered::WitContents>,
                $crate::__private::offered::WitReadError,
            > {
                $crate::__private::offered::read::<$offers>(&uri)
            }
        }

        impl $crate::__private::offered::PromptsGuest for __ToolhostExport {
            fn listed() -> ::std::vec::Vec<$crate::__private::offered::WitPrompt> {
                $crate::__private::offered::prompts::<$offers>()
            }

            fn get(
                name: ::std::string::String,
                arguments: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
                context: $crate::__private::offered::WitPromptContext,
            ) -> ::std::result::Result<
                $crate::__private::offered::WitPromptOutcome,
                $crate::__private::offered::WitPromptError,
            > {
                $crate::__private::offered::get::<$offers>(&name, &arguments, context)
            }

            fn complete(
                name: ::std::string::String,
                argument: ::std::string::String,
                value: ::std::string::String,
            ) -> ::std::vec::Vec<::std::string::String> {
                <$offers as $crate::Offers>::complete(&name, &argument, &value)
            }
        }

        // Off wasm (a tool crate's own unit tests) there is nothing to export to.
        #[cfg(target_family = "wasm")]
        $crate::__private::bindings::__export_toolbox!(
            __ToolhostExport with_types_in $crate::__private::bindings
        );
    };
}

/// What the [`export!`] macro expands to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use wit_bindgen;

    /// The generated bindings of the `toolhost:tool/toolbox-with-resources-and-prompts`
    /// world: every component the SDK builds exports `resources` and `prompts`, empty unless
    /// it offers some (the host announces only what is offered).
    #[allow(missing_docs, unsafe_code, unused_qualifications)]
    pub mod bindings {
        wit_bindgen::generate!({
            path: "../wit",
            world: "toolbox-with-resources-and-prompts",
            pub_export_macro: true,
            export_macro_name: "__export_toolbox",
            runtime_path: "::toolhost_sdk::__private::wit_bindgen::rt",
        });
    }

    use bindings::exports::toolhost::tool::tools as types;
    pub use bindings::exports::toolhost::tool::tools::Guest;
    pub use types::{
        CallContext as WitCallContext, Outcome as WitOutcome, ToolError as WitToolError,
        ToolResult as WitToolResult, ToolSpec,
    };

    pub use crate::offers::Nothing;
    use crate::{
        CallContext, Capability, Content, Output, Reply, ResourceContents, Tool, ToolError,
    };

    pub use crate::glue as offered;

    /// The specs of `tools`, as the host reads them.
    pub fn describe(tools: Vec<Tool>) -> Vec<ToolSpec> {
        tools
            .into_iter()
            .map(|tool| ToolSpec {
                input_schema: tool.input_schema().to_string(),
                output_schema: tool.output_schema().map(|schema| schema.to_string()),
                capabilities: tool
                    .capabilities
                    .iter()
                    .map(|(capability, reason)| types::CapabilityRequest {
                        capability: match capability.clone() {
                            Capability::Http(host) => types::Capability::Http(host),
                            Capability::Env(name) => types::Capability::Env(name),
                            Capability::ReadDir(path) => types::Capability::ReadDir(path),
                            Capability::WriteDir(path) => types::Capability::WriteDir(path),
                            Capability::Socket(addr) => types::Capability::Socket(addr),
                        },
                        reason: reason.clone(),
                    })
                    .collect(),
                name: tool.name,
                title: tool.title,
                annotations: types::Annotations {
                    read_only: tool.annotations.read_only,
                    destructive: tool.annotations.destructive,
                    idempotent: tool.annotations.idempotent,
                    open_world: tool.annotations.open_world,
                },
                description: tool.description,
            })
            .collect()
    }

    /// An [`Output`] as the host reads it.
    fn result(output: Output) -> WitToolResult {
        let content = output
            .content
            .into_iter()
            .map(|part| match part {
                Content::Text(text) => types::Content::Text(text),
                Content::Image { data, mime_type } => {
                    types::Content::Image(types::Media { data, mime_type })
                }
                Content::Audio { data, mime_type } => {
                    types::Content::Audio(types::Media { data, mime_type })
                }
                Content::ResourceLink {
                    uri,
                    name,
                    description,
                    mime_type,
                } => types::Content::ResourceLink(types::ResourceLink {
                    uri,
                    name,
                    description,
                    mime_type,
                }),
                Content::Resource {
                    uri,
                    mime_type,
                    contents,
                } => types::Content::EmbeddedResource(types::EmbeddedResource {
                    uri,
                    mime_type,
                    contents: match contents {
                        ResourceContents::Text(text) => types::ResourceContents::Text(text),
                        ResourceContents::Blob(bytes) => types::ResourceContents::Blob(bytes),
                    },
                }),
            })
            .collect();
        WitToolResult {
            content,
            structured: output.structured.map(|value| value.to_string()),
        }
    }

    /// The answers the host passes (JSON texts, which it checked are objects), parsed.
    pub fn answers(answers: Vec<(String, String)>) -> Vec<(String, serde_json::Value)> {
        answers
            .into_iter()
            .map(|(key, answer)| {
                let answer = serde_json::from_str(&answer).unwrap_or(serde_json::Value::Null);
                (key, answer)
            })
            .collect()
    }

    /// Runs the tool called `name`.
    pub fn call(
        tools: Vec<Tool>,
        name: &str,
        arguments: &str,
        context: WitCallContext,
    ) -> Result<types::Outcome, WitToolError> {
        let Some(tool) = tools.iter().find(|tool| tool.name == name) else {
            let names: Vec<&str> = tools.iter().map(Tool::name).collect();
            return Err(WitToolError::Failed(format!(
                "this component has no tool `{name}`; it offers: {}",
                names.join(", ")
            )));
        };
        let context = CallContext {
            call_id: context.call_id,
            values: context.values,
            input_responses: answers(context.input_responses),
            request_state: context.request_state,
        };
        tool.call(arguments, &context)
            .map(|reply| match reply {
                Reply::Done(output) => types::Outcome::Complete(result(output)),
                Reply::Ask { requests, state } => {
                    types::Outcome::InputRequired(types::InputRequired {
                        requests: requests
                            .into_iter()
                            .map(|(key, ask)| {
                                let params = ask.params.to_string();
                                (
                                    key,
                                    types::InputRequest {
                                        method: ask.method,
                                        params,
                                    },
                                )
                            })
                            .collect(),
                        state,
                    })
                }
            })
            .map_err(|error| match error {
                ToolError::InvalidArguments(message) => WitToolError::InvalidArguments(message),
                ToolError::Failed(message) => WitToolError::Failed(message),
            })
    }
}
