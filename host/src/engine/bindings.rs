//! The host side of the `toolhost:tool` WIT package (`wit/tool.wit`). This is the one place
//! bindings are generated; everything else uses the types from here.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "toolbox",
    exports: { default: async },
});

pub(crate) use exports::toolhost::tool::tools as wit;

/// The versioned name of the interface a tool component exports.
pub(crate) const TOOLS_INTERFACE: &str = "toolhost:tool/tools@0.1.0";
