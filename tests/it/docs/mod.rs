//! What lives beside the code and must not drift from it: the manual, the templates, the registry's lists, the policies, the demo's seeder, the emulator.

pub mod as_code;
pub mod demo_seed;
pub mod emulator;
pub mod least_privilege;
pub mod manual;
pub mod registry;
pub mod templates;
