//! The "process per call" baseline of the benchmark: a tiny native tool that reads
//! `{"a": .., "b": ..}` from stdin and prints the sum, as a tool run by spawning a process
//! would.

use std::io::Read as _;

fn main() {
    let mut input = String::new();
    if std::io::stdin().read_to_string(&mut input).is_err() {
        std::process::exit(2);
    }
    let value: serde_json::Value = match serde_json::from_str(&input) {
        Ok(value) => value,
        Err(error) => {
            eprintln!("invalid arguments: {error}");
            std::process::exit(1);
        }
    };
    let sum = value["a"].as_f64().unwrap_or(f64::NAN) + value["b"].as_f64().unwrap_or(f64::NAN);
    println!("{}", serde_json::json!(sum));
}
