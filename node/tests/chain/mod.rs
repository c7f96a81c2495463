//! The chain's rules through a node: deploys, fees, session keys, tier-up, upgrade policies and
//! the fair-play suite.

mod deploy;
mod fair_play;
mod fees;
mod sessions;
mod tier_up;
mod upgrade_policies;
