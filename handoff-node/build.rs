//! Sets up linking of the Node addon.

fn main() {
    napi_build::setup();
}
