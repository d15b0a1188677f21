//! A WASI command: a valid component, but not a tool component.

fn main() {
    println!("hello");
}
