//! Loading, validating and expanding manifests: real kubectl and API output,
//! bad input, source maps, and a load-time measurement at scale.
//!
//! Each integration test file is a module of this one test binary, so the
//! crate links its tests once instead of once per file.

mod bad_input;
mod expand;
mod input_limits;
mod large_world;
mod load;
mod source_map;
mod yaml11;
