//! Arithmetic a language model should not do in its head.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, Toolbox};

/// Two numbers.
#[derive(Deserialize, JsonSchema)]
struct Pair {
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
}

/// One number.
#[derive(Deserialize, JsonSchema)]
struct SquareRoot {
    /// The number to take the square root of; must not be negative.
    x: f64,
}

fn finite(value: f64) -> Result<f64, ToolError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(ToolError::failed(
            "the result is too large for a 64-bit floating-point number",
        ))
    }
}

fn add(pair: Pair) -> Result<f64, ToolError> {
    finite(pair.a + pair.b)
}

fn multiply(pair: Pair) -> Result<f64, ToolError> {
    finite(pair.a * pair.b)
}

fn square_root(args: SquareRoot) -> Result<f64, ToolError> {
    if args.x < 0.0 {
        return Err(ToolError::invalid_arguments(format!(
            "x is {}; the square root of a negative number is not a real number: send a number \
             of 0 or more, such as {{\"x\": {}}} for the square root of its size",
            args.x, -args.x
        )));
    }
    Ok(args.x.sqrt())
}

struct Calculator;

impl Toolbox for Calculator {
    fn tools() -> Vec<Tool> {
        vec![
            Tool::new(
                "add",
                "Adds two numbers (a + b, a plus b) and returns the sum.",
                add,
            )
            .title("Add")
            .read_only()
            .idempotent()
            .open_world(false),
            Tool::new(
                "multiply",
                "Multiplies two numbers (a × b, a times b) and returns the product.",
                multiply,
            )
            .title("Multiply")
            .read_only()
            .idempotent()
            .open_world(false),
            Tool::new(
                "square_root",
                "Computes the square root (sqrt, √) of a number. Use it whenever a square root is \
                 asked for.",
                square_root,
            )
            .title("Square root")
            .read_only()
            .idempotent()
            .open_world(false),
        ]
    }
}

toolhost_sdk::export!(Calculator);
