//! A component that loads, and that breaks one of `host check`'s checks per tool (and one tool
//! that passes them all), so the tests see each failure reported with its fix.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_sdk::{Tool, ToolError, Toolbox};

/// Two numbers.
#[derive(Deserialize, JsonSchema)]
struct Pair {
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
}

/// Adds `a` and `b`: passes every check.
fn add(pair: Pair) -> Result<f64, ToolError> {
    Ok(pair.a + pair.b)
}

/// A value the schema calls a number, that the tool takes as anything (and whose field has
/// no description).
#[derive(Deserialize, JsonSchema)]
struct Loose {
    #[schemars(with = "f64")]
    x: serde_json::Value,
}

/// Accepts any `x`, whatever its schema says.
fn echo(loose: Loose) -> Result<String, ToolError> {
    Ok(format!("got {}", loose.x))
}

/// Some text.
#[derive(Deserialize, JsonSchema)]
struct Text {
    /// The text.
    text: String,
}

/// A count whose schema says integer, and that is a string.
#[derive(Serialize, JsonSchema)]
struct Count {
    /// How many words.
    #[schemars(with = "u32")]
    words: String,
}

/// Returns a result that does not fit its own output schema.
fn count_words(_: Text) -> Result<Count, ToolError> {
    Ok(Count {
        words: "many".to_owned(),
    })
}

/// Opens a TCP connection it never requested.
fn ping(_: Text) -> Result<String, ToolError> {
    std::net::TcpStream::connect("127.0.0.1:9")
        .map(|_| "connected".to_owned())
        .map_err(|e| ToolError::failed(format!("cannot connect: {e}")))
}

/// Panics.
fn explode(_: Text) -> Result<String, ToolError> {
    panic!("boom")
}

struct Sloppy;

impl Toolbox for Sloppy {
    fn tools() -> Vec<Tool> {
        vec![
            Tool::new("add", "Adds two numbers and returns their sum.", add),
            Tool::new("echo", "Echoes.", echo),
            Tool::new("count_words", "Counts the words of a text.", count_words),
            Tool::new("ping", "Checks that the network answers.", ping),
            Tool::new("explode", "Splits a text into its characters.", explode),
        ]
    }
}

toolhost_sdk::export!(Sloppy);
