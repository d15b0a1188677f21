# Runs the build helper (helper/: WIT bindings, component encoding), built once per machine
# into the toolhost cache and shared by every tool project.
helper() {
  CARGO_TARGET_DIR=$cache/helper cargo run --quiet --release --manifest-path helper/Cargo.toml -- "$@"
}
