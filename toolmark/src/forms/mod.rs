//! Forms and wizards: app-owned values that a user edits and an agent may fill and
//! submit through ordinary tools ([`form`]), and ordered steps of forms shown one at
//! a time ([`wizard`]). They register tools through the same public registration an
//! app uses, and never reach into the call pipeline's queue or deadline.

pub mod form;
pub mod wizard;
