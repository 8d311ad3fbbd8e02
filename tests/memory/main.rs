//! Resident memory stays bounded. Each test measures the whole process's
//! memory, so each holds `tracetree_testkit::memory::alone` for its run:
//! the tests of this binary run one at a time.

mod lazy_memory;
mod lazy_open_memory;
mod lazy_random_release;
mod lazy_rebuild_memory;
mod lazy_repair_memory;
mod lazy_scratch_sidecar;
mod lazy_walk_release;
mod packed_in_place_memory;
mod packed_unpack_memory;
