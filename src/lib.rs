//! Test-suite package for Toolmark (integration tests, examples, benches).
