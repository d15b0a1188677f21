//! Tells the binary which target it is built for: `cargo metadata --filter-platform` needs it
//! to stay offline (without it, cargo wants every platform's dependencies downloaded).

fn main() {
    let target = std::env::var("TARGET").expect("cargo sets TARGET for build scripts");
    println!("cargo:rustc-env=XTASK_TARGET={target}");
}
