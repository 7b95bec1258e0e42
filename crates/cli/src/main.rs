//! The podplace command line.
fn main() {}
